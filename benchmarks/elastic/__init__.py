"""Elastic embeddings (issue 51): sentence-transformers' AdaptiveLayerLoss probed against lwap's poolers
(adaptive_layer_probe.py), and the depth × dimension frontier of lwap's own depth-elastic training
(frontier.py). Scripts import each other as `from benchmarks.elastic.x import y` (run from the repository
root, or as files: each puts the root on sys.path)."""
