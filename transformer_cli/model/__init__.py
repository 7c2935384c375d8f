"""The NumPy forward pass, from arrays: the Transformer built from a spec's components and weights (one loop over
its blocks), threads over the batch (parallel), one-token decoding, encoder-decoders and one block's attention
weights. It never reads a file nor asks the cost model: tasks/ does both."""
