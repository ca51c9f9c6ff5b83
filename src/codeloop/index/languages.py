"""Language detection by file name, and the tree-sitter grammars and queries for each language."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache

import tree_sitter as ts

# Extensions we recognise; only some have a grammar (see _GRAMMARS), the rest are indexed
# lexically so that config files, docs and other languages are still searchable.
_EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cs": "csharp",
    ".rb": "ruby", ".php": "php", ".kt": "kotlin", ".swift": "swift", ".scala": "scala",
    ".sh": "shell", ".bash": "shell", ".sql": "sql", ".lua": "lua",
    ".md": "markdown", ".rst": "rst", ".txt": "text",
    ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".json": "json", ".cfg": "ini",
    ".ini": "ini", ".html": "html", ".css": "css", ".xml": "xml",
    # Code without a grammar here: named so that it ranks as code, not as prose ("text").
    ".pyw": "python", ".pyx": "cython", ".pxd": "cython", ".pxi": "cython",
    ".cxx": "cpp", ".hxx": "cpp", ".hh": "cpp", ".cu": "cuda", ".cuh": "cuda",
    ".mm": "objective-c", ".m": "objective-c/matlab", ".f": "fortran", ".for": "fortran", ".f77": "fortran",
    ".f90": "fortran", ".f95": "fortran", ".f03": "fortran", ".f08": "fortran",
    ".jl": "julia", ".r": "r", ".pl": "perl", ".pm": "perl", ".ex": "elixir",
    ".exs": "elixir", ".erl": "erlang", ".hrl": "erlang", ".hs": "haskell", ".ml": "ocaml",
    ".mli": "ocaml", ".clj": "clojure", ".cljs": "clojure", ".dart": "dart", ".vue": "vue",
    ".svelte": "svelte", ".zig": "zig", ".nim": "nim", ".groovy": "groovy", ".kts": "kotlin",
    ".zsh": "shell", ".ps1": "powershell", ".scss": "css", ".sass": "css", ".less": "css",
    ".proto": "protobuf", ".graphql": "graphql", ".tf": "hcl", ".cmake": "cmake",
}
_NAMES: dict[str, str] = {"Makefile": "make", "Dockerfile": "docker", "setup.cfg": "ini",
                          "CMakeLists.txt": "cmake"}

# Imports are not in the grammars' tags.scm (Python's has none at all), so they are ours.
_IMPORT_QUERIES: dict[str, str] = {
    "python": """
        (import_statement name: (dotted_name) @import)
        (import_statement name: (aliased_import name: (dotted_name) @import))
        (import_from_statement module_name: (dotted_name) @import)
        (import_from_statement module_name: (relative_import) @import)
    """,
    "javascript": """
        (import_statement source: (string) @import)
        (call_expression function: (identifier) @_fn arguments: (arguments (string) @import)
          (#eq? @_fn "require"))
    """,
    "go": "(import_spec path: (interpreted_string_literal) @import)",
    "rust": "(use_declaration argument: (_) @import)",
    "java": "(import_declaration (scoped_identifier) @import)",
}
_IMPORT_QUERIES["typescript"] = _IMPORT_QUERIES["javascript"]
_IMPORT_QUERIES["tsx"] = _IMPORT_QUERIES["javascript"]

# Python's tags.scm sees only calls; base classes are references worth having for the graph.
_EXTRA_TAGS: dict[str, str] = {
    "python": """
        (class_definition superclasses: (argument_list
          [(identifier) @name (attribute attribute: (identifier) @name)]) @reference.class)
        (decorator [(identifier) @name (attribute attribute: (identifier) @name)
                    (call function: [(identifier) @name (attribute attribute: (identifier) @name)])]
          ) @reference.call
    """,
    # Methods in an `impl` block get the implemented type as their parent.
    "rust": "(impl_item type: (type_identifier) @name) @definition.impl",
}

# language -> (module, function returning the grammar, modules whose tags.scm apply)
_GRAMMARS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "python": ("tree_sitter_python", "language", ("tree_sitter_python",)),
    "javascript": ("tree_sitter_javascript", "language", ("tree_sitter_javascript",)),
    "typescript": ("tree_sitter_typescript", "language_typescript",
                   ("tree_sitter_javascript", "tree_sitter_typescript")),
    "tsx": ("tree_sitter_typescript", "language_tsx",
            ("tree_sitter_javascript", "tree_sitter_typescript")),
    "go": ("tree_sitter_go", "language", ("tree_sitter_go",)),
    "rust": ("tree_sitter_rust", "language", ("tree_sitter_rust",)),
    "java": ("tree_sitter_java", "language", ("tree_sitter_java",)),
}

# Documentation, data and configuration: rarely where a code change lands.
PROSE_LANGUAGES = frozenset({"markdown", "rst", "text", "yaml", "json", "toml", "ini", "html",
                             "xml"})


def detect_language(rel_path: str) -> str:
    """The language of a file from its name; "text" when unknown."""
    # String operations, not pathlib (the same name and suffix, ~10 times faster:
    # the first task context asks for every file of the repository).
    name = rel_path.rstrip("/").rpartition("/")[2]
    dot = name.rfind(".")
    suffix = name[dot:] if 0 < dot < len(name) - 1 else ""
    return _NAMES.get(name) or _EXTENSIONS.get(suffix.lower(), "text")


def has_grammar(language: str) -> bool:
    return language in _GRAMMARS


@dataclass(frozen=True)
class Grammar:
    language: ts.Language
    tags: ts.Query
    imports: ts.Query | None


@cache
def grammar(language: str) -> Grammar:
    """The compiled grammar and queries for a language that `has_grammar`."""
    module_name, func, tag_modules = _GRAMMARS[language]
    module = importlib.import_module(module_name)
    lang = ts.Language(getattr(module, func)())
    tag_text = "\n".join(importlib.import_module(m).TAGS_QUERY for m in tag_modules)
    tag_text += _EXTRA_TAGS.get(language, "")
    import_text = _IMPORT_QUERIES.get(language)
    return Grammar(
        language=lang,
        tags=ts.Query(lang, tag_text),
        imports=ts.Query(lang, import_text) if import_text else None,
    )
