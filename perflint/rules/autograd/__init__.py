"""PFL6xx: autograd, inference and memory: no_grad in evaluation, eval mode, gradients, debug APIs."""
