"""Golden values for autograd/ops/indexing.cpp: index_select, gather, embedding, one_hot."""
import torch

from golden._common import backward_case, case, randn


def cases():
    c = {}
    x, index = randn(5, 3), torch.tensor([4, 0, 4, 2])
    c["index_select_dim0"] = case({"x": x, "index": index},
                                  {"out": x.index_select(0, index)}, dim=0)
    x, index = randn(2, 5, 3), torch.tensor([1, 3])
    c["index_select_dim1"] = case({"x": x, "index": index},
                                  {"out": x.index_select(1, index)}, dim=1)
    x, index = randn(3, 4), torch.tensor([[0, 3], [2, 2], [1, 0]])
    c["gather_dim1"] = case({"x": x, "index": index}, {"out": x.gather(1, index)}, dim=1)
    x, index = randn(4, 3), torch.tensor([[3, 0, 1], [0, 2, 2]])
    c["gather_dim0_smaller_index"] = case({"x": x, "index": index},
                                          {"out": x.gather(0, index)}, dim=0)
    weight, ids = randn(6, 4), torch.tensor([[0, 5, 2], [2, 2, 1]])
    c["embedding"] = case({"weight": weight, "ids": ids},
                          {"out": torch.nn.functional.embedding(ids, weight)})
    index = torch.tensor([[0, 3], [1, 1]])
    c["one_hot_5"] = case({"index": index},
                          {"out": torch.nn.functional.one_hot(index, 5)}, num_classes=5)
    c["one_hot_inferred"] = case({"index": index},
                                 {"out": torch.nn.functional.one_hot(index, -1)}, num_classes=-1)

    # Backward (float64, from a random upstream gradient): repeated indices accumulate.
    c["index_select_grad_dim0_repeats"] = backward_case(
        lambda x, index: x.index_select(0, index),
        {"x": randn(5, 3), "index": torch.tensor([4, 0, 4, 2, 4])})
    c["index_select_grad_dim1"] = backward_case(
        lambda x, index: x.index_select(1, index),
        {"x": randn(2, 5, 3), "index": torch.tensor([1, 3, 1])})
    c["gather_grad_dim1_repeats"] = backward_case(
        lambda x, index: x.gather(1, index),
        {"x": randn(3, 4), "index": torch.tensor([[0, 3, 0], [2, 2, 2], [1, 0, 3]])})
    c["gather_grad_dim0"] = backward_case(
        lambda x, index: x.gather(0, index),
        {"x": randn(4, 3), "index": torch.tensor([[3, 0, 1], [3, 2, 2]])})
    c["embedding_grad_padding_idx"] = backward_case(
        lambda weight, ids: torch.nn.functional.embedding(ids, weight, padding_idx=2),
        {"weight": randn(6, 4), "ids": torch.tensor([[0, 5, 2], [2, 2, 1]])}, padding_idx=2)
    return c
