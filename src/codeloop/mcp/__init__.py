"""MCP: the user's MCP servers as session tools (client), and codeloop as an MCP server."""
