"""The bottom layer: what every other layer may rely on (DESIGN.md, Layout)."""
