"""The repository's benchmarks and studies (not shipped with lwap): scripts, and the modules they share."""
