"""GGUF files (llama.cpp, Ollama, LM Studio): their header checked, their metadata mapped to a spec, their tensors
dequantised one at a time by the `gguf` package that llama.cpp maintains."""
