"""Classic source mutations over Python's own AST (stdlib ``ast``; no third-party mutator).

Why our own: mutmut 3 rewrites only function bodies (its trampolines never touch module-level
constants such as ``_UNRESOLVED_EFFECTS = frozenset({...})`` or ``LEASE_PRECONDITIONS``, which
are exactly the safety sets this project must test) and has no raise-deletion or set-member
removal; cosmic-ray's core operators lack set/tuple/dict member removal, raise deletion,
``max``<->``min`` and string changes, and new operators need an installed entry-point package.

Every mutant is "replace one node of the module's AST by a changed copy" and is named by a key
that survives unrelated edits (line numbers do not appear in it):
``<enclosing qualname>: <operator>: <original source> -> <mutated source>`` plus ``#n`` when the
same text occurs more than once in one scope. ``equivalents.toml`` refers to mutants by that key.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass

_MAX_SNIPPET = 90

# Ordering comparisons move their boundary; equality, identity and membership are negated.
_COMPARE_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}
_BINOP_SWAP: dict[type[ast.operator], type[ast.operator]] = {ast.Add: ast.Sub, ast.Sub: ast.Add}
_SWAPPED_BUILTINS = {"max": "min", "min": "max", "all": "any", "any": "all"}
# Fields whose subtree is a type annotation: mutating it changes nothing at run time.
_ANNOTATION_FIELDS = {"annotation", "returns"}


@dataclass(frozen=True)
class Mutant:
    module: str
    key: str
    operator: str
    line: int
    position: int  # index of the node in the deterministic walk of the module
    replacement: ast.AST


@dataclass(frozen=True)
class _Site:
    parent: ast.AST
    field: str
    index: int | None
    node: ast.AST
    scope: str
    skip_strings: bool


def _snippet(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= _MAX_SNIPPET else text[: _MAX_SNIPPET - 3] + "..."


def _is_docstring(parent: ast.AST, field: str, index: int | None, node: ast.AST) -> bool:
    return (
        field == "body" and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and (index == 0 or isinstance(parent, ast.Module | ast.ClassDef) or _follows_assignment(parent, index))
    )


def _follows_assignment(parent: ast.AST, index: int | None) -> bool:
    # An attribute docstring ("""...""" right after NAME = value) documents, it never runs.
    body = getattr(parent, "body", [])
    return index is not None and index > 0 and isinstance(body[index - 1], ast.Assign | ast.AnnAssign)


def _is_export_list(node: ast.AST) -> bool:
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)


def _sites(tree: ast.Module) -> Iterator[_Site]:
    """Every (parent, field, node) in a fixed depth-first order, with the enclosing qualname."""

    def walk(parent: ast.AST, scope: str, skip_strings: bool) -> Iterator[_Site]:
        for field, value in ast.iter_fields(parent):
            if field in _ANNOTATION_FIELDS or field in {"decorator_list", "type_params"}:
                continue
            children = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
            for index, child in children:
                if not isinstance(child, ast.AST) or _is_docstring(parent, field, index, child):
                    continue
                if isinstance(child, ast.ImportFrom | ast.Import | ast.JoinedStr) or _is_export_list(child):
                    continue  # imports and __all__ are wiring; f-strings are messages
                if isinstance(child, ast.Subscript):
                    continue  # generic aliases such as tuple[ScopeRange, GenerationKey]
                yield _Site(parent, field, index, child, scope, skip_strings)
                inner = scope
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    inner = child.name if scope == "<module>" else f"{scope}.{child.name}"
                # A raise's arguments are its message: changing the text decides nothing.
                yield from walk(child, inner, skip_strings or isinstance(child, ast.Raise))

    yield from walk(tree, "<module>", False)


def _variants(site: _Site) -> Iterator[tuple[str, ast.AST]]:
    node = site.node
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            swapped = _COMPARE_SWAP.get(type(op))
            if swapped is not None:
                new = copy.deepcopy(node)
                new.ops[i] = swapped()
                yield "compare", new
    elif isinstance(node, ast.BoolOp):
        for i in range(len(node.values)):
            rest = [copy.deepcopy(v) for j, v in enumerate(node.values) if j != i]
            yield "bool-drop", rest[0] if len(rest) == 1 else ast.BoolOp(op=type(node.op)(), values=rest)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "not-drop", copy.deepcopy(node.operand)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAP:
        arith = copy.deepcopy(node)
        arith.op = _BINOP_SWAP[type(node.op)]()
        yield "arith", arith
    elif isinstance(node, ast.Set) or (isinstance(node, ast.Tuple | ast.List) and isinstance(node.ctx, ast.Load)):
        for i in range(len(node.elts)):
            fewer = copy.deepcopy(node)
            del fewer.elts[i]
            yield "member-drop", fewer
    elif isinstance(node, ast.Dict):
        for i in range(len(node.keys)):
            smaller = copy.deepcopy(node)
            del smaller.keys[i]
            del smaller.values[i]
            yield "entry-drop", smaller
    elif isinstance(node, ast.Raise):
        yield "raise-drop", ast.Pass()
    elif isinstance(node, ast.Break):
        yield "break-continue", ast.Continue()
    elif isinstance(node, ast.Continue):
        yield "continue-break", ast.Break()
    elif isinstance(node, ast.Call):
        yield from _call_variants(node)
    elif isinstance(node, ast.Constant):
        yield from _constant_variants(node, site.skip_strings)


def _call_variants(node: ast.Call) -> Iterator[tuple[str, ast.AST]]:
    if isinstance(node.func, ast.Name) and node.func.id in _SWAPPED_BUILTINS:
        new = copy.deepcopy(node)
        assert isinstance(new.func, ast.Name)
        new.func.id = _SWAPPED_BUILTINS[node.func.id]
        yield "builtin-swap", new
    for i in range(len(node.keywords)):
        new = copy.deepcopy(node)
        del new.keywords[i]
        yield "kwarg-drop", new


def _constant_variants(node: ast.Constant, skip_strings: bool) -> Iterator[tuple[str, ast.AST]]:
    value = node.value
    if isinstance(value, bool):
        yield "constant", ast.Constant(not value)
    elif isinstance(value, int):
        yield "constant", ast.Constant(value + 1)
        if value != 0:
            yield "constant", ast.Constant(0)
    elif isinstance(value, str) and not skip_strings:
        yield "string", ast.Constant(f"XX{value}XX")
    elif isinstance(value, bytes) and value:
        yield "string", ast.Constant(b"X" + value)


def enumerate_mutants(module: str, source: str) -> list[Mutant]:
    tree = ast.parse(source)
    mutants: list[Mutant] = []
    seen: dict[str, int] = {}
    for position, site in enumerate(_sites(tree)):
        for operator, replacement in _variants(site):
            base = f"{site.scope}: {operator}: {_snippet(site.node)} -> {_snippet(replacement)}"
            seen[base] = seen.get(base, 0) + 1
            key = base if seen[base] == 1 else f"{base} #{seen[base]}"
            mutants.append(Mutant(module, key, operator, getattr(site.node, "lineno", 0), position, replacement))
    return mutants


def mutated_source(source: str, mutant: Mutant) -> str:
    """The module's source with that one node replaced (re-parsed, so the walk order matches)."""
    tree = ast.parse(source)
    for position, site in enumerate(_sites(tree)):
        if position == mutant.position:
            _replace(site, copy.deepcopy(mutant.replacement))
            return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
    raise LookupError(f"mutant position {mutant.position} not found in {mutant.module}")


def _replace(site: _Site, replacement: ast.AST) -> None:
    ast.copy_location(replacement, site.node)
    if site.index is None:
        setattr(site.parent, site.field, replacement)
    else:
        getattr(site.parent, site.field)[site.index] = replacement
