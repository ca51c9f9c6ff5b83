"""Generic evaluation suites: any repository or set of files, any language, a test command."""
