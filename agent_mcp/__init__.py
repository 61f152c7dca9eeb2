"""The MCP surface: the agent operations as MCP tools, over stdio and streamable HTTP."""
