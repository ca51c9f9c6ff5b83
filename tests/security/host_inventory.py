"""Find every call in our source that opens, stats, lists, reads, writes, changes, removes or
executes a path on the host, by reading the code with `ast` (no import, no execution).

A site is keyed by (module, enclosing function's qualified name, call name), not by line,
so moving code around does not disturb the allow-list in test_host_file_inventory.py.
Calls on a `SafeRoot` (the safe file API) are not sites: that is where paths should go.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Module functions that touch a path (or run a program) on the host, by module.
_MODULE_CALLS: dict[str, frozenset[str]] = {
    "os": frozenset({
        "open", "stat", "lstat", "chmod", "lchmod", "chown", "lchown", "listdir", "scandir",
        "walk", "fwalk", "remove", "unlink", "rmdir", "removedirs", "rename", "renames",
        "replace", "mkdir", "makedirs", "symlink", "link", "readlink", "access", "utime",
        "truncate", "mkfifo", "mknod", "getxattr", "setxattr", "removexattr", "listxattr",
        "chdir", "chroot", "statvfs", "system", "popen", "execv", "execve", "execvp",
        "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp",
        "spawnvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "posix_spawn",
        "posix_spawnp"}),
    "os.path": frozenset({"exists", "lexists", "isfile", "isdir", "islink", "ismount",
                          "getsize", "getmtime", "getatime", "getctime", "samefile"}),
    "io": frozenset({"open"}),
    "subprocess": frozenset({"run", "Popen", "call", "check_call", "check_output",
                             "getoutput", "getstatusoutput"}),
    "asyncio": frozenset({"create_subprocess_exec", "create_subprocess_shell"}),
    "tempfile": frozenset({"mkdtemp", "mkstemp", "NamedTemporaryFile", "TemporaryFile",
                           "TemporaryDirectory", "SpooledTemporaryFile"}),
    "sqlite3": frozenset({"connect"}),
    "glob": frozenset({"glob", "iglob"}),
    "tarfile": frozenset({"open"}),
    "zipfile": frozenset({"ZipFile"}),
}
# shutil is all paths, but for these two, which name no path of ours.
_SHUTIL_EXEMPT = frozenset({"which", "get_terminal_size", "ignore_patterns"})
# Methods of pathlib.Path (and os.DirEntry) that touch the file system.
_PATH_METHODS = frozenset({
    "read_text", "read_bytes", "write_text", "write_bytes", "open", "stat", "lstat", "exists",
    "is_file", "is_dir", "is_symlink", "is_mount", "iterdir", "glob", "rglob", "unlink",
    "mkdir", "rmdir", "chmod", "lchmod", "touch", "symlink_to", "hardlink_to", "readlink",
    "rename", "replace", "samefile"})
# `str.replace(a, b)` and `dataclasses.replace(obj, **changes)` are not Path.replace(target).
_ONE_ARG_METHODS = frozenset({"rename", "replace"})
_SAFE_TYPE = "SafeRoot"


@dataclass(frozen=True, order=True)
class Site:
    module: str
    function: str
    call: str

    def __str__(self) -> str:
        return f"{self.module}:{self.function}:{self.call}"


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _names_safe_type(node: ast.expr | None) -> bool:
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip() == _SAFE_TYPE
    dotted = _dotted(node)
    return dotted is not None and dotted.rsplit(".", 1)[-1] == _SAFE_TYPE


def _is_safe_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _names_safe_type(node.func)


@dataclass
class _SafeNames:
    """What holds a SafeRoot: local names per module, attributes and functions everywhere."""

    attrs: set[str]
    functions: set[str]
    locals: dict[str, set[str]]


def _pairs(targets: list[ast.expr], value: ast.expr | None
           ) -> Iterator[tuple[ast.expr, ast.expr | None]]:
    """(target, value) of an assignment, element by element for `a, b = x, y`."""
    for target in targets:
        if (isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                and len(target.elts) == len(value.elts)):
            yield from zip(target.elts, value.elts, strict=True)
        else:
            yield target, value


def _collect_safe_names(trees: dict[str, ast.Module]) -> _SafeNames:
    found = _SafeNames(set(), set(), {})
    for module, tree in trees.items():
        local = found.locals.setdefault(module, set())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if _names_safe_type(node.returns):
                    found.functions.add(node.name)
                    found.attrs.add(node.name)  # a property returning one
                for arg in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
                    if _names_safe_type(arg.annotation):
                        local.add(arg.arg)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                typed = isinstance(node, ast.AnnAssign) and _names_safe_type(node.annotation)
                for target, value in _pairs(targets, node.value):
                    if typed or (value is not None and _is_safe_call(value)):
                        if isinstance(target, ast.Name):
                            local.add(target.id)
                        elif isinstance(target, ast.Attribute):
                            found.attrs.add(target.attr)
            elif (isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name)
                  and _is_safe_call(node.context_expr)):
                local.add(node.optional_vars.id)
    return found


class _Visitor(ast.NodeVisitor):
    def __init__(self, module: str, safe: _SafeNames) -> None:
        self.module = module
        self.safe = safe
        self.local_safe = safe.locals.get(module, set())
        self.stack: list[str] = []
        self.aliases: dict[str, str] = {}
        self.sites: set[Site] = set()

    # -- scopes and imports ---------------------------------------------------------------

    def _scoped(self, node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_ClassDef = _scoped
    visit_FunctionDef = _scoped
    visit_AsyncFunctionDef = _scoped

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name.split(".")[0]] = (
                alias.name if alias.asname else alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0:
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    # -- calls ----------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        name = self._site_name(node)
        if name is not None:
            self.sites.add(Site(self.module, ".".join(self.stack) or "<module>", name))
        self.generic_visit(node)

    def _site_name(self, node: ast.Call) -> str | None:
        func = node.func
        dotted = _dotted(func)
        if dotted is not None:
            head, _, rest = dotted.partition(".")
            full = self.aliases.get(head, head) + ("." + rest if rest else "")
            if full == "open" or full == "builtins.open":
                return "open"
            module, _, fn = full.rpartition(".")
            if module == "shutil":
                return None if fn in _SHUTIL_EXEMPT else full
            if module in _MODULE_CALLS:
                return full if fn in _MODULE_CALLS[module] else None
            if head in self.aliases and "." in dotted and head not in self.local_safe:
                return None  # another module's function (re.compile, dataclasses.replace)
        if not isinstance(func, ast.Attribute):
            return None
        method = func.attr
        if method == "read" and any(k.arg == "encoding" for k in node.keywords):
            return "*.read(path)"  # ConfigParser.read(filenames, encoding=...)
        if method not in _PATH_METHODS or self._is_safe(func.value):
            return None
        if method in _ONE_ARG_METHODS and len(node.args) != 1:
            return None
        return f"*.{method}"

    def _is_safe(self, receiver: ast.expr) -> bool:
        if _is_safe_call(receiver):
            return True
        if isinstance(receiver, ast.Name):
            in_class = _SAFE_TYPE in self.stack and receiver.id == "self"
            return in_class or receiver.id in self.local_safe
        if isinstance(receiver, ast.Attribute):
            return receiver.attr in self.safe.attrs
        if isinstance(receiver, ast.Call):
            inner = _dotted(receiver.func)
            return inner is not None and inner.rsplit(".", 1)[-1] in self.safe.functions
        return False


def _module_name(src: Path, path: Path) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def scan_tree(package: Path) -> set[Site]:
    """Every host file-system or process site under the package directory `package`."""
    trees = {_module_name(package, p): ast.parse(p.read_text("utf-8"), str(p))
             for p in sorted(package.rglob("*.py"))}
    safe = _collect_safe_names(trees)
    sites: set[Site] = set()
    for module, tree in trees.items():
        visitor = _Visitor(module, safe)
        visitor.visit(tree)
        sites |= visitor.sites
    return sites
