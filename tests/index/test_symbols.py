from __future__ import annotations

from codeloop.index.symbols import extract

PYTHON = b'''import os.path
from .models import User as U
from collections import OrderedDict

@register
class Repository(Base):
    def load(self, key: str) -> dict:
        return fetch_row(key)

def fetch_row(key):
    return os.path.join(key)
'''

JAVASCRIPT = b'''import { parse } from "./parser.js";
const fs = require("fs");
class Lexer extends Base {
  next() { return readToken(this.src); }
}
function readToken(src) { return new Lexer(); }
'''

TYPESCRIPT = b'''import { Shape } from "./shape";
interface Drawable { draw(ctx: Canvas): void; }
export class Circle implements Drawable {
  draw(ctx: Canvas): void { paint(ctx); }
}
function paint(ctx: Canvas): void {}
'''

GO = b'''package geo
import (
    "fmt"
    "math"
)
type Point struct { X, Y float64 }
func (p Point) Dist() float64 { return math.Sqrt(square(p.X)) }
func square(v float64) float64 { fmt.Println(v); return v * v }
'''

RUST = b'''use std::collections::HashMap;
pub struct Cache { map: HashMap<String, u32> }
impl Cache {
    pub fn get(&self, k: &str) -> Option<u32> { lookup(&self.map, k) }
}
fn lookup(m: &HashMap<String, u32>, k: &str) -> Option<u32> { m.get(k).copied() }
'''

JAVA = b'''package bank;
import java.util.List;
public class Account extends Entity {
    public int balance(int day) { return compute(day); }
    private int compute(int d) { return d; }
}
'''


def defs(source: bytes, language: str) -> dict[str, tuple[str, str | None, int]]:
    return {d.name: (d.kind, d.parent, d.start_line)
            for d in extract(source, language).definitions}


def refs(source: bytes, language: str) -> set[tuple[str, int]]:
    return {(r.name, r.line) for r in extract(source, language).references}


def test_python_definitions_references_and_imports() -> None:
    d = defs(PYTHON, "python")
    assert d["Repository"] == ("class", None, 6)
    assert d["load"] == ("method", "Repository", 7)
    assert d["fetch_row"] == ("function", None, 10)
    r = refs(PYTHON, "python")
    assert {("fetch_row", 8), ("Base", 6), ("register", 5), ("join", 11)} <= r
    assert extract(PYTHON, "python").imports == ["os.path", ".models", "collections"]
    sig = next(x for x in extract(PYTHON, "python").definitions if x.name == "load").signature
    assert sig == "def load(self, key: str) -> dict:"


def test_javascript() -> None:
    d = defs(JAVASCRIPT, "javascript")
    assert d["Lexer"][0] == "class"
    assert d["next"] == ("method", "Lexer", 4)
    assert d["readToken"] == ("function", None, 6)
    assert {("readToken", 4), ("Lexer", 6)} <= refs(JAVASCRIPT, "javascript")
    assert extract(JAVASCRIPT, "javascript").imports == ["./parser.js", "fs"]


def test_typescript() -> None:
    d = defs(TYPESCRIPT, "typescript")
    assert d["Drawable"][0] == "interface"
    assert d["Circle"] == ("class", None, 3)
    assert d["paint"] == ("function", None, 6)
    assert ("paint", 4) in refs(TYPESCRIPT, "typescript")
    assert extract(TYPESCRIPT, "typescript").imports == ["./shape"]


def test_go() -> None:
    d = defs(GO, "go")
    assert d["Point"][0] == "type"
    assert d["Dist"][0] == "method"
    assert d["square"] == ("function", None, 8)
    assert {("square", 7), ("Sqrt", 7), ("Println", 8)} <= refs(GO, "go")
    assert extract(GO, "go").imports == ["fmt", "math"]


def test_rust() -> None:
    d = defs(RUST, "rust")
    assert d["get"] == ("method", "Cache", 4)
    assert d["lookup"] == ("function", None, 6)
    assert ("lookup", 4) in refs(RUST, "rust")
    assert extract(RUST, "rust").imports == ["std::collections::HashMap"]


def test_java() -> None:
    d = defs(JAVA, "java")
    assert d["Account"] == ("class", None, 3)
    assert d["balance"] == ("method", "Account", 4)
    assert ("compute", 4) in refs(JAVA, "java")
    assert extract(JAVA, "java").imports == ["java.util.List"]


def test_unknown_language_has_no_symbols() -> None:
    result = extract(b"some words", "text")
    assert result.definitions == [] and result.references == [] and result.imports == []
