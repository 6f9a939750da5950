"""The views suite (`--suite views`): the `.npy` and `model.safetensors` files of a mount, read by numpy and safetensors."""
