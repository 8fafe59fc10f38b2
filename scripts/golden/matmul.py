"""Golden values for autograd/ops/matmul.cpp: torch.matmul in float32 on every rank combination.

Views (transposes, strided slices) are made by the C++ test from the stored contiguous inputs;
the case's name says which view, and the output is what torch.matmul gives on that view.
"""
from golden._common import backward_case, case, randn


def product(a, b, **params):
    return case({"a": a, "b": b}, {"out": a @ b}, **params)


def cases():
    c = {}
    # Every rank combination of torch.matmul.
    c["dot"] = product(randn(7), randn(7))
    c["matrix_matrix"] = product(randn(3, 4), randn(4, 5))
    c["vector_matrix"] = product(randn(4), randn(4, 5))
    c["matrix_vector"] = product(randn(3, 4), randn(4))
    c["vector_batched"] = product(randn(4), randn(2, 4, 5))
    c["batched_vector"] = product(randn(2, 3, 4), randn(4))
    c["batched_batched"] = product(randn(2, 3, 4), randn(2, 4, 5))
    c["batched_matrix"] = product(randn(2, 3, 4), randn(4, 5))
    c["matrix_batched"] = product(randn(3, 4), randn(2, 4, 5))
    c["broadcast_batch"] = product(randn(2, 1, 3, 4), randn(5, 4, 2))
    c["broadcast_both"] = product(randn(1, 3, 2, 4), randn(2, 1, 4, 5))
    c["inner_size_1"] = product(randn(3, 1), randn(1, 5))
    # Sums of 128 float32 terms, long enough for BLAS to block the inner loop.
    c["long_sum"] = product(randn(16, 128), randn(128, 8))

    # Views: the test computes matmul(a.t(), b.t()) and so on.
    a, b = randn(4, 3), randn(5, 4)
    c["transposed_both"] = case({"a": a, "b": b}, {"out": a.t() @ b.t()})
    a, b = randn(3, 10), randn(4, 5)
    c["sliced_columns"] = case({"a": a, "b": b}, {"out": a[:, ::2][:, :4] @ b})
    q, k = randn(2, 3, 5, 8), randn(2, 3, 7, 8)
    c["attention_scores"] = case({"q": q, "k": k}, {"out": q @ k.transpose(-2, -1)})

    # Backward on every rank combination (float64, from a random upstream gradient): the
    # gradients of 1-D operands and of broadcast batch dims are the easy ones to get wrong.
    def grad_case(a_shape, b_shape):
        return backward_case(lambda a, b: a @ b, {"a": randn(*a_shape), "b": randn(*b_shape)})
    c["grad_dot"] = grad_case((7,), (7,))
    c["grad_matrix_matrix"] = grad_case((3, 4), (4, 5))
    c["grad_vector_matrix"] = grad_case((4,), (4, 5))
    c["grad_matrix_vector"] = grad_case((3, 4), (4,))
    c["grad_vector_batched"] = grad_case((4,), (2, 4, 5))
    c["grad_batched_vector"] = grad_case((2, 3, 4), (4,))
    c["grad_batched_batched"] = grad_case((2, 3, 4), (2, 4, 5))
    c["grad_matrix_batched"] = grad_case((3, 4), (2, 4, 5))
    c["grad_broadcast_batch"] = grad_case((2, 1, 3, 4), (5, 4, 2))
    c["grad_broadcast_both"] = grad_case((1, 3, 2, 4), (2, 1, 4, 5))
    # The test multiplies transposed views of the stored a [4, 3] and b [5, 4]: a.t() @ b.t().
    c["grad_transposed_both"] = backward_case(lambda a, b: a.t() @ b.t(),
                                              {"a": randn(4, 3), "b": randn(5, 4)})
    return c
