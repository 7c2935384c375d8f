"""Tasks over many parts, each what one command does: what a path names (sources), a forward pass from files
(runner), attention maps, generation, plans, `tfm check`, conversions, seeded weights and the benchmark. They read
files and check memory; the layers below them take arrays (model/) or specs (analysis/)."""
