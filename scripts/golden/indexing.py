"""Golden values for autograd/ops/indexing.cpp: index_select, gather, embedding, one_hot."""
import torch

from golden._common import case, randn


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
    return c
