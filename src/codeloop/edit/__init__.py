"""The edit engine: parse model-written edits and apply them exactly, or refuse clearly.

`matching` finds where one edit belongs (the matching ladder), `formats` parses patches,
`apply` applies a set of file operations atomically, `textfile` keeps each file's encoding
and line endings. Everything here is pure; the tools in `codeloop.tools.edit_tools` do I/O.
"""
