"""The bottom layer: what every other layer may rely on (docs/design.md, Layout)."""
