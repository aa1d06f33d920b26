"""The experiment configs, installed with lwap as `lwap.configs` so `lwap train NAME` finds them anywhere."""
