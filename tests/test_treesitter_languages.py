"""code_* tools on a small real source file per language: outline, definition, signature,
an update round trip (every other byte unchanged) and a refused broken edit (file unchanged)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeward.kernel.catalog import Catalog
from codeward.kernel.context import ToolContext
from codeward.kernel.outcome import ToolOutcome
from tests.conftest import snapshot


@dataclass(frozen=True)
class Case:
    filename: str
    source: str
    outline: tuple[tuple[str, str], ...]
    """(kind, qualified name) pairs the outline must contain."""
    name: str
    """The symbol the definition/signature/update checks use (natural separator)."""
    dotted: str
    """The same symbol written with '.' separators (must resolve to the same definition)."""
    definition: str
    """Its exact source as it appears in ``source`` (from the start of its line)."""
    signature: str
    replacement: str
    broken: str


CASES = (
    Case(
        "shapes.c",
        "#include <stdio.h>\n\nstruct point {\n    int x;\n    int y;\n};\n\ntypedef struct point point_t;\n\n"
        "static int area(const struct point *p, int scale)\n{\n    return p->x * p->y * scale;\n}\n\n"
        "int perimeter(int w, int h);\n\nenum color { RED, GREEN };\n",
        (("struct", "point"), ("typedef", "point_t"), ("function", "area"), ("prototype", "perimeter"),
         ("enum", "color")),
        "area", "area",
        "static int area(const struct point *p, int scale)\n{\n    return p->x * p->y * scale;\n}",
        "static int area(const struct point *p, int scale)",
        "static int area(const struct point *p, int scale)\n{\n    return 2 * p->x * p->y * scale;\n}",
        "static int area(const struct point *p, int scale)\n{\n    return p->x * (p->y;\n",
    ),
    Case(
        "widget.hpp",
        "#pragma once\nnamespace ui {\n\nclass Widget : public Base {\n public:\n  int size() const;\n"
        "  void draw() {\n    paint(1);\n  }\n};\n\nint Widget::size() const {\n  return 3;\n}\n\n}  // namespace ui\n",
        (("namespace", "ui"), ("class", "ui::Widget"), ("method", "ui::Widget::draw"),
         ("method", "ui::Widget::size")),
        "ui::Widget::draw", "ui.Widget.draw",
        "  void draw() {\n    paint(1);\n  }",
        "void draw()",
        "  void draw() {\n    paint(2);\n    paint(3);\n  }",
        "  void draw() {\n    paint(2;\n  }",
    ),
    Case(
        "models.py",
        "import os\n\n\nclass Model(Base):\n    \"\"\"A model.\"\"\"\n\n    @property\n    def name(self) -> str:\n"
        "        return 'm'\n\n    def save(self, path: str) -> None:\n        os.remove(path)\n\n\n"
        "def helper(x):\n    return x\n",
        (("class", "Model"), ("method", "Model.name"), ("method", "Model.save"), ("function", "helper")),
        "Model.save", "Model.save",
        "    def save(self, path: str) -> None:\n        os.remove(path)",
        "def save(self, path: str) -> None:",
        "    def save(self, path: str) -> None:\n        print(path)\n        os.remove(path)",
        "    def save(self, path: str) -> None:\n        os.remove(path\n",
    ),
    Case(
        "app.js",
        "import x from 'x';\n\nexport class Cart {\n  constructor(items) {\n    this.items = items;\n  }\n\n"
        "  total(tax) {\n    return this.items.length * tax;\n  }\n}\n\nexport const add = (a, b) => a + b;\n\n"
        "function main() {\n  return new Cart([]);\n}\n",
        (("class", "Cart"), ("constructor", "Cart.constructor"), ("method", "Cart.total"), ("function", "add"),
         ("function", "main")),
        "Cart.total", "Cart.total",
        "  total(tax) {\n    return this.items.length * tax;\n  }",
        "total(tax)",
        "  total(tax) {\n    return this.items.length * tax * 2;\n  }",
        "  total(tax) {\n    return this.items.length * (tax;\n  }",
    ),
    Case(
        "service.ts",
        "interface Repo {\n  find(id: number): string;\n}\n\ntype Id = number;\n\n"
        "export class Service implements Repo {\n  find(id: number): string {\n    return String(id);\n  }\n}\n\n"
        "enum Mode { A, B }\n",
        (("interface", "Repo"), ("type", "Id"), ("class", "Service"), ("method", "Service.find"),
         ("enum", "Mode")),
        "Service.find", "Service.find",
        "  find(id: number): string {\n    return String(id);\n  }",
        "find(id: number): string",
        "  find(id: number): string {\n    return `#${id}`;\n  }",
        "  find(id: number): string {\n    return String(id;\n  }",
    ),
    Case(
        "view.tsx",
        "export function Button(props: { label: string }) {\n  return <button>{props.label}</button>;\n}\n\n"
        "export class Panel {\n  render() {\n    return <div />;\n  }\n}\n",
        (("function", "Button"), ("class", "Panel"), ("method", "Panel.render")),
        "Button", "Button",
        "export function Button(props: { label: string }) {\n  return <button>{props.label}</button>;\n}",
        "export function Button(props: { label: string })",
        "export function Button(props: { label: string }) {\n  return <b>{props.label}</b>;\n}",
        "export function Button(props: { label: string }) {\n  return <button>{props.label</button>;\n}",
    ),
    Case(
        "geo.go",
        "package geo\n\ntype Point struct {\n\tX, Y int\n}\n\ntype Shape interface {\n\tArea() int\n}\n\n"
        "func (p *Point) Move(dx int) {\n\tp.X += dx\n}\n\nfunc New() *Point {\n\treturn &Point{}\n}\n",
        (("struct", "Point"), ("interface", "Shape"), ("method", "Point.Move"), ("function", "New")),
        "Point.Move", "Point.Move",
        "func (p *Point) Move(dx int) {\n\tp.X += dx\n}",
        "func (p *Point) Move(dx int)",
        "func (p *Point) Move(dx int) {\n\tp.X += dx\n\tp.Y += dx\n}",
        "func (p *Point) Move(dx int) {\n\tp.X += (dx\n}",
    ),
    Case(
        "lib.rs",
        "use std::fmt;\n\n#[derive(Debug)]\npub struct Stack<T> {\n    items: Vec<T>,\n}\n\nimpl<T> Stack<T> {\n"
        "    pub fn push(&mut self, item: T) {\n        self.items.push(item);\n    }\n}\n\n"
        "pub trait Named {\n    fn name(&self) -> String;\n}\n\npub fn helper() -> i32 {\n    1\n}\n",
        (("struct", "Stack"), ("impl", "Stack"), ("method", "Stack::push"), ("trait", "Named"),
         ("function", "helper")),
        "Stack::push", "Stack.push",
        "    pub fn push(&mut self, item: T) {\n        self.items.push(item);\n    }",
        "pub fn push(&mut self, item: T)",
        "    pub fn push(&mut self, item: T) {\n        self.items.insert(0, item);\n    }",
        "    pub fn push(&mut self, item: T) {\n        self.items.push(item;\n    }",
    ),
    Case(
        "Account.java",
        "package bank;\n\npublic class Account extends Base {\n    private int balance;\n\n"
        "    public Account() {\n        balance = 0;\n    }\n\n    public int deposit(int amount) {\n"
        "        balance += amount;\n        return balance;\n    }\n\n    interface Listener { void on(); }\n}\n",
        (("class", "Account"), ("constructor", "Account.Account"), ("method", "Account.deposit"),
         ("interface", "Account.Listener")),
        "Account.deposit", "Account.deposit",
        "    public int deposit(int amount) {\n        balance += amount;\n        return balance;\n    }",
        "public int deposit(int amount)",
        "    public int deposit(int amount) {\n        return balance += amount;\n    }",
        "    public int deposit(int amount) {\n        balance += amount\n        return balance;\n    ",
    ),
    Case(
        "Store.cs",
        "using System;\n\nnamespace Shop.Core\n{\n    public class Store : IStore\n    {\n"
        "        public int Count { get; set; }\n\n        public void Add(string item)\n        {\n"
        "            Count++;\n        }\n    }\n}\n",
        (("namespace", "Shop.Core"), ("class", "Shop.Core.Store"), ("property", "Shop.Core.Store.Count"),
         ("method", "Shop.Core.Store.Add")),
        "Store.Add", "Store.Add",
        "        public void Add(string item)\n        {\n            Count++;\n        }",
        "public void Add(string item)",
        "        public void Add(string item)\n        {\n            Count += 2;\n        }",
        "        public void Add(string item)\n        {\n            Count++\n        ",
    ),
    Case(
        "queue.rb",
        "module Jobs\n  class Queue < Base\n    def push(job)\n      @items << job\n    end\n\n"
        "    def self.create\n      new\n    end\n  end\nend\n",
        (("module", "Jobs"), ("class", "Jobs::Queue"), ("method", "Jobs::Queue#push"),
         ("method", "Jobs::Queue.create")),
        "Jobs::Queue#push", "Jobs.Queue.push",
        "    def push(job)\n      @items << job\n    end",
        "def push(job)",
        "    def push(job)\n      @items.unshift(job)\n    end",
        "    def push(job)\n      @items << (job\n    end",
    ),
    Case(
        "User.php",
        "<?php\nnamespace App\\Models;\n\nclass User extends Model\n{\n    public function name(): string\n"
        "    {\n        return $this->name;\n    }\n}\n\nfunction helper($x)\n{\n    return $x;\n}\n",
        (("namespace", "App\\Models"), ("class", "App\\Models\\User"), ("method", "App\\Models\\User::name"),
         ("function", "App\\Models\\helper")),
        "User::name", "User.name",
        "    public function name(): string\n    {\n        return $this->name;\n    }",
        "public function name(): string",
        "    public function name(): string\n    {\n        return strtoupper($this->name);\n    }",
        "    public function name(): string\n    {\n        return ($this->name;\n    }",
    ),
    Case(
        "Repo.kt",
        "package data\n\nclass Repo(val db: Db) : Base() {\n    fun find(id: Int): String {\n"
        "        return db.get(id)\n    }\n\n    companion object {\n        fun create() = Repo(Db())\n    }\n}\n\n"
        "fun top(x: Int): Int = x\n",
        (("class", "Repo"), ("method", "Repo.find"), ("object", "Repo.Companion"), ("function", "top")),
        "Repo.find", "Repo.find",
        "    fun find(id: Int): String {\n        return db.get(id)\n    }",
        "fun find(id: Int): String",
        "    fun find(id: Int): String {\n        return db.get(id + 1)\n    }",
        "    fun find(id: Int): String {\n        return db.get(id\n    }",
    ),
    Case(
        "Shape.swift",
        "import Foundation\n\nclass Circle: Shape {\n    var r: Double = 1\n\n    func area() -> Double {\n"
        "        return r * r * 3.14\n    }\n}\n\nstruct Box {\n    func volume() -> Int { return 1 }\n}\n\n"
        "protocol Shape {\n    func area() -> Double\n}\n",
        (("class", "Circle"), ("method", "Circle.area"), ("struct", "Box"), ("method", "Box.volume"),
         ("protocol", "Shape")),
        "Circle.area", "Circle.area",
        "    func area() -> Double {\n        return r * r * 3.14\n    }",
        "func area() -> Double",
        "    func area() -> Double {\n        return r * r * Double.pi\n    }",
        "    func area() -> Double {\n        return (r * r * 3.14\n    }",
    ),
    Case(
        "util.lua",
        "local M = {}\n\nfunction M.add(a, b)\n  return a + b\nend\n\nfunction M:describe()\n  return 'm'\nend\n\n"
        "local function helper(x)\n  return x\nend\n\nreturn M\n",
        (("function", "M.add"), ("function", "M.describe"), ("function", "helper")),
        "M.add", "M.add",
        "function M.add(a, b)\n  return a + b\nend",
        "function M.add(a, b)",
        "function M.add(a, b)\n  return b + a\nend",
        "function M.add(a, b)\n  return (a + b\nend",
    ),
    Case(
        "deploy.sh",
        "#!/usr/bin/env bash\nset -e\n\nbuild() {\n  make all\n}\n\nfunction deploy {\n  build\n  echo done\n}\n\n"
        "deploy\n",
        (("function", "build"), ("function", "deploy")),
        "build", "build",
        "build() {\n  make all\n}",
        "build()",
        "build() {\n  make clean all\n}",
        "build() {\n  make all\n",
    ),
)


@pytest.fixture(params=CASES, ids=lambda c: c.filename)
def case(request: pytest.FixtureRequest, root: Path) -> Case:
    current: Case = request.param
    (root / current.filename).write_text(current.source)
    return current


Run = Callable[..., ToolOutcome]


@pytest.fixture
def run(catalog: Catalog, ctx: ToolContext) -> Run:
    """Call a tool through the catalog (``name`` is a tool argument here, so not the ``call`` fixture)."""

    def go(tool: str, **arguments: object) -> ToolOutcome:
        return catalog.call(tool, arguments, ctx)

    return go


def test_outline_lists_the_definitions(run: Run, case: Case) -> None:
    outcome = run("code_get_outline", path=case.filename)
    assert not outcome.is_error, outcome.text
    assert outcome.structured is not None
    found = {(s["kind"], s["qualified_name"]) for s in outcome.structured["symbols"]}
    missing = [pair for pair in case.outline if pair not in found]
    assert not missing, f"missing {missing}; outline:\n{outcome.text}"
    for _kind, qualified in case.outline:
        short = qualified.split("::")[-1].split(".")[-1].split("#")[-1].split("\\")[-1]
        assert short in outcome.text


def test_definition_is_the_exact_source(run: Run, case: Case) -> None:
    for name in (case.name, case.dotted):
        outcome = run("code_get_definition", path=case.filename, name=name)
        assert not outcome.is_error, outcome.text
        assert outcome.text == case.definition


def test_signature_is_the_declaration_without_body(run: Run, case: Case) -> None:
    outcome = run("code_get_signature", path=case.filename, name=case.name)
    assert not outcome.is_error, outcome.text
    assert outcome.text == case.signature


def test_update_changes_only_the_definition(run: Run, case: Case, root: Path) -> None:
    path = root / case.filename
    before = path.read_bytes()
    outcome = run("code_update_definition", path=case.filename, name=case.name, new_content=case.replacement)
    assert not outcome.is_error, outcome.text
    after = path.read_bytes()
    start = before.index(case.definition.encode())
    end = start + len(case.definition.encode())
    assert after == before[:start] + case.replacement.encode() + before[end:]
    again = run("code_get_definition", path=case.filename, name=case.name)
    assert again.text == case.replacement


def test_definition_round_trip_leaves_the_file_identical(run: Run, case: Case, root: Path) -> None:
    before = snapshot(root)
    text = run("code_get_definition", path=case.filename, name=case.name).text
    outcome = run("code_update_definition", path=case.filename, name=case.name, new_content=text)
    assert not outcome.is_error, outcome.text
    assert snapshot(root) == before


def test_broken_edit_is_refused_and_changes_nothing(run: Run, case: Case, root: Path) -> None:
    before = snapshot(root)
    outcome = run("code_update_definition", path=case.filename, name=case.name, new_content=case.broken)
    assert outcome.is_error, f"a broken edit was accepted: {outcome.text}"
    assert "syntax error" in outcome.text and "line" in outcome.text
    assert snapshot(root) == before


def test_skeleton_elides_the_function_body(run: Run, case: Case) -> None:
    outcome = run("code_get_skeleton", path=case.filename)
    assert not outcome.is_error, outcome.text
    assert case.signature in outcome.text
    assert case.definition not in outcome.text or case.definition.count("\n") == 0
    assert "..." in outcome.text


ALTERNATE_NAMES = (
    ("lib.rs", "impl Stack", "impl<T> Stack<T>"),
    ("lib.rs", "Stack::push", "pub fn push(&mut self, item: T)"),
    ("Store.cs", "Shop.Core.Store.Add", "public void Add(string item)"),
    ("Store.cs", "Core::Store::Add", "public void Add(string item)"),
    ("User.php", "App\\Models\\User::name", "public function name(): string"),
    ("User.php", "App.Models.helper", "function helper($x)"),
    ("util.lua", "M:describe", "function M:describe()"),
    ("queue.rb", "Jobs::Queue.create", "def self.create"),
    ("widget.hpp", "Widget::size", "int Widget::size() const"),
    ("models.py", "Model.name", "def name(self) -> str:"),
    ("Repo.kt", "Repo.Companion.create", "fun create()"),
)


@pytest.mark.parametrize(("filename", "name", "signature"), ALTERNATE_NAMES, ids=[n for _, n, _ in ALTERNATE_NAMES])
def test_names_in_each_languages_notation(run: Run, root: Path, filename: str, name: str, signature: str) -> None:
    case = next(c for c in CASES if c.filename == filename)
    (root / filename).write_text(case.source)
    outcome = run("code_get_signature", path=filename, name=name)
    assert not outcome.is_error, outcome.text
    assert outcome.text == signature
