"""codeloop inside editors: the Agent Client Protocol agent (`codeloop acp`)."""
