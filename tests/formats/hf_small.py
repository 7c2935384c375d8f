"""The sizes of the conformance tests' small Hugging Face models (d = 32, two blocks, 97 tokens)."""

SMALL = dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=64, rms_norm_eps=1e-5)  # fmt: skip
