"""Files in and out, each read with its size and shape checked before any data: regular files, NumPy arrays,
safetensors, and model weights."""
