#include "nn/feed_forward.h"

#include "nn/activation.h"

namespace sg::nn {

FeedForward::FeedForward(int64_t d_model_, int64_t d_ff_, double p, std::string activation_)
    : UnaryModule("FeedForward"),
      d_model(d_model_),
      d_ff(d_ff_),
      activation(std::move(activation_)) {
  SG_CHECK(activation == "relu" || activation == "gelu",
           "FeedForward: activation must be \"relu\" or \"gelu\", got \"{}\"", activation);
  linear1 = register_module("linear1", std::make_shared<Linear>(d_model, d_ff));
  std::shared_ptr<UnaryModule> act;
  if (activation == "relu") {
    act = std::make_shared<ReLU>();
  } else {
    act = std::make_shared<GELU>();  // exact erf form, as torch's "gelu"
  }
  activation_fn = register_module("activation", act);
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  linear2 = register_module("linear2", std::make_shared<Linear>(d_ff, d_model));
}

Tensor FeedForward::forward(const Tensor& x) {
  return call_forward_hooks(
      linear2->forward(dropout->forward(activation_fn->forward(linear1->forward(x)))));
}

}  // namespace sg::nn
