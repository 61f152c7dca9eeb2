"""What the agent-facing surfaces (``api`` and ``agent_mcp``) share, as DRF sees it: the
input shapes, who is calling and at what rate, idempotent retries, and the answers each
operation gives (docs/api.md). The HTTP glue lives here and above; the layers below it know
nothing of DRF."""
