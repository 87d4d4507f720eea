#!/usr/bin/env python3
"""Checks the loops of device kernels in PTX (tests/unit/device_loops_ptx.cu).

device_loops_ptx.py NVCC INCLUDE_DIR SOURCE WORK_DIR

A loop is a label and a later branch back to it; an innermost loop holds no other. For kernels
named scope_*: no innermost loop holds memory instructions of both .gpu and .sys scope (the
operation chose its scope once; a kernel's loop over whole operations holds both choices). For kernels named
copy_*: every loop that stores 16-byte words (st*.v4) issues at least two 16-byte loads before its
first such store, and the copy's alignment decisions (every xor, which forms the source and
destination's skew, and every and with the mask 15 or 511, an immediate or a register chosen
between the two) depend on no load but the kernel's parameters: they are taken from the
untranslated symmetric address, not from the peer's copy, whose delta is loaded from the device
state (a block put waited for that load before its first word: bench "ab_put" rung 15 against 6).
Prints each kernel's loops and alignment instructions either way; exits 1 on a violation.
"""
import os
import re
import subprocess
import sys


def loops(body):
    body = re.sub(r"\{ // callseq.*?\} // callseq \d+", "call;", body, flags=re.S)
    lines = [l.strip() for l in body.split("\n")]
    lines = [l for l in lines if l and not l.startswith("//") and not l.startswith(".")]
    labels = {l[:-1]: i for i, l in enumerate(lines) if l.endswith(":")}
    for i, line in enumerate(lines):
        m = re.search(r"\bbra(?:\.uni)?\s+(\$\w+);", line)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            yield m.group(1), lines[labels[m.group(1)]:i + 1]


def scoped(ins):
    return re.search(r"\b(ld|st|atom|red|fence)\.[a-z_.]*\b(gpu|sys)\b", ins)


def instructions(body):
    """(opcode, operand text, defined registers, used registers) of each instruction."""
    body = re.sub(r"\{ // callseq.*?\} // callseq \d+", "", body, flags=re.S)
    out = []
    for line in body.split("\n"):
        line = line.strip()
        if not line or line[0] in "/.{}" or line.endswith(":"):
            continue
        line = re.sub(r"^@!?\w+\s+", "", line).rstrip(";")
        m = re.match(r"(\S+)\s*(.*)", line)
        op, rest = m.group(1), m.group(2)
        regs = re.findall(r"%\w+", rest)
        if re.match(r"(st|red|bar|bra|ret|call|fence|membar|prefetch|trap|exit)\b", op) or not regs:
            out.append((op, rest, [], regs))
        else:
            defs = re.findall(r"%\w+", rest.split(",")[0])
            out.append((op, rest, defs, regs[len(defs):]))
    return out


def loaded(ins):
    """Registers whose value depends on a load other than a kernel parameter's (a register is
    assigned in several places in PTX: any of them counts)."""
    tainted = set()
    changed = True
    while changed:
        changed = False
        for op, _, defs, uses in ins:
            source = (op.startswith("ld.") and not op.startswith("ld.param")) or op.startswith("atom")
            if source or any(u in tainted for u in uses):
                for d in defs:
                    if d not in tainted:
                        tainted.add(d)
                        changed = True
    return tainted


def alignment_checks(name, body):
    """The number of alignment instructions that wait for a load (printed)."""
    ins = instructions(body)
    tainted = loaded(ins)
    masks = {d for op, rest, defs, _ in ins
             if op.startswith("selp") and re.search(r",\s*511,\s*15,", rest) for d in defs}
    bad = seen = 0
    for op, rest, _, uses in ins:
        if not re.match(r"(and|xor)\.b(32|64)$", op):
            continue
        imm = re.search(r",\s*(-?\d+)$", rest)
        if op.startswith("and") and not (imm and imm.group(1) in ("15", "511")) and \
                not any(u in masks for u in uses):
            continue
        seen += 1
        waits = any(u in tainted for u in uses)
        bad += waits
        print(f"  {op} {rest}{'  <- waits for a load (the peer delta?)' if waits else ''}")
    if seen == 0:
        print(f"  {name}: no alignment instruction found")
        return 1
    return bad


def main():
    nvcc, include, source, work = sys.argv[1:5]
    ptx = os.path.join(work, "device_loops.ptx")
    cmd = [nvcc, "-rdc=true", "-arch=sm_90", "-O3", "-std=c++17", "-DNDEBUG",
           "-DVSHMEM_DEVICE_DEBUG=0", "-I" + include, "-ptx", source, "-o", ptx]
    subprocess.run(cmd, check=True)
    text = open(ptx).read()
    bad = 0
    kernels = 0
    for m in re.finditer(r"\.entry (\w+)\((.*?)\n\}\n", text, re.S):
        name, body = m.group(1), m.group(2)
        kind = "scope" if "scope_" in name else "copy" if "copy_" in name else None
        if kind is None:
            continue
        kernels += 1
        print(name)
        found = list(loops(body))
        for label, seg in found:
            inner = sum(1 for l2, s2 in found if s2 is not seg and len(s2) < len(seg)
                        and "\n".join(s2) in "\n".join(seg))
            scopes = {s.group(2) for s in map(scoped, seg) if s}
            if kind == "scope" and scopes and inner == 0:
                ok = len(scopes) == 1
                print(f"  loop {label}: {len(seg)} lines, scopes {sorted(scopes)}"
                      f"{'' if ok else '  <- both scopes in one loop'}")
                bad += not ok
            stores = [i for i, l in enumerate(seg) if re.search(r"\bst\.[a-z.]*v4\.", l)]
            if kind == "copy" and stores:
                loads = sum(1 for l in seg[:stores[0]] if re.search(r"\bld\.[a-z.]*v4\.", l))
                ok = loads >= 2
                print(f"  loop {label}: {loads} 16-byte loads before the first 16-byte store"
                      f"{'' if ok else '  <- one word in flight'}")
                bad += not ok
        if kind == "copy":
            bad += alignment_checks(name, body)
    if kernels == 0:
        print("no scope_/copy_ kernels found in the PTX")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
