"""The safetensors suite (`--suite safetensors`): safetensors files and sharded checkpoints, read by ztfs and by the safetensors package."""
