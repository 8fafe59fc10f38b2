"""Golden values for autograd/ops/reduce.cpp: sum, mean, var, amax/amin, max/min, argmax/argmin.

Each case stores x and the reduction's result(s); params name the dims and keepdim, so the C++
test runs the same call. A transposed case is made by the C++ test (x.transpose(0, 1)).
"""
import torch

from golden._common import backward_case, case, randn


def reduction(fn, x, dims, keepdim=False, **extra):
    return case({"x": x}, {"out": fn(x, dims, keepdim)}, dims=list(dims), keepdim=keepdim,
                **extra)


def cases():
    c = {}
    c["sum_dim1"] = reduction(torch.sum, randn(3, 4, 5), (1,))
    x = randn(3, 4)
    c["sum_all"] = case({"x": x}, {"out": x.sum()}, dims=[], keepdim=False)
    c["sum_negative_dims_keepdim"] = reduction(torch.sum, randn(2, 3, 4), (-1, 0), True)
    # 1000 terms: the kernel accumulates float32 in double, as PyTorch's pairwise sum is accurate.
    c["sum_long_row"] = reduction(torch.sum, randn(4, 1000), (1,))
    x = torch.randint(-5, 6, (3, 4))
    c["sum_int64"] = reduction(torch.sum, x, (0,))
    c["mean_dims02"] = reduction(torch.mean, randn(2, 3, 4), (0, 2))
    c["mean_keepdim"] = reduction(torch.mean, randn(3, 5), (-1,), True)
    x = randn(4, 6)
    c["var_dim1"] = case({"x": x}, {"out": torch.var(x, 1)}, dims=[1], correction=1,
                         keepdim=False)
    x = randn(3, 4, 5)
    c["var_population_dims01_keepdim"] = case(
        {"x": x}, {"out": torch.var(x, (0, 1), correction=0, keepdim=True)}, dims=[0, 1],
        correction=0, keepdim=True)
    c["amax_dim1"] = reduction(torch.amax, randn(3, 5), (1,))
    c["amin_dims01_keepdim"] = reduction(torch.amin, randn(2, 3, 4), (0, 1), True)
    x = randn(4, 5)
    values, indices = torch.max(x, 0)
    c["max_dim0"] = case({"x": x}, {"values": values, "indices": indices}, dim=0, keepdim=False)
    x = randn(3, 4, 2)
    values, indices = torch.min(x, -2, keepdim=True)
    c["min_dim_neg2_keepdim"] = case({"x": x}, {"values": values, "indices": indices}, dim=-2,
                                     keepdim=True)
    x = randn(5, 3)
    c["argmax_argmin_dim1"] = case({"x": x}, {"argmax": torch.argmax(x, 1),
                                              "argmin": torch.argmin(x, 1)}, dim=1)
    x = randn(4, 3)
    c["sum_transposed_dim1"] = case({"x": x}, {"out": x.t().sum(1)}, dims=[1], keepdim=False)

    # Backward (float64, from a random upstream gradient). The C++ test runs the call each name
    # says; "ties" inputs are small whole numbers, so the maxima repeat.
    def grad(fn, *shape):
        return backward_case(fn, {"x": randn(*shape)})

    def ties(*shape):
        return torch.randint(0, 3, shape).double()
    c["sum_grad_dim1"] = grad(lambda x: x.sum(1), 3, 4, 5)
    c["sum_grad_all"] = grad(lambda x: x.sum(), 3, 4)
    c["sum_grad_dims_neg1_0_keepdim"] = grad(lambda x: x.sum((-1, 0), keepdim=True), 2, 3, 4)
    c["sum_grad_transposed_dim1"] = grad(lambda x: x.t().sum(1), 4, 3)
    c["mean_grad_dims02"] = grad(lambda x: x.mean((0, 2)), 2, 3, 4)
    c["mean_grad_dim_neg1_keepdim"] = grad(lambda x: x.mean(-1, keepdim=True), 3, 5)
    c["var_grad_dim1"] = grad(lambda x: x.var(1), 4, 6)
    c["var_grad_population_dims01_keepdim"] = grad(
        lambda x: x.var((0, 1), correction=0, keepdim=True), 3, 4, 5)
    # amax/amin split g evenly among ties; max/min along a dim send it to the returned index.
    c["amax_grad_dim1_ties"] = backward_case(lambda x: x.amax(1), {"x": ties(3, 5)})
    c["amin_grad_dims01_keepdim_ties"] = backward_case(lambda x: x.amin((0, 1), keepdim=True),
                                                       {"x": ties(2, 3, 4)})
    c["max_grad_dim0"] = grad(lambda x: x.max(0).values, 4, 5)
    c["min_grad_dim_neg2_keepdim"] = grad(lambda x: x.min(-2, keepdim=True).values, 3, 4, 2)
    return c
