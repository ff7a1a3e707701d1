#!/usr/bin/env python3
"""Fails when a public declaration of the generated Kotlin (a class, an interface method, a
constructor or a top-level function) has no KDoc: uniffi copies the Rust doc comments, so a
missing one is a missing Rust doc comment.  Usage: check-kdoc.py throttlekit.kt"""
import re, sys
lines = open(sys.argv[1]).read().splitlines()
missing = []
checked = 0
in_iface = False
for i, l in enumerate(lines):
    if re.match(r"^public interface \w+Interface", l):
        in_iface = True
    elif in_iface and l.startswith("}"):
        in_iface = False
    decl = re.match(r"^(open class|data class|enum class|sealed class) `?(\w+)", l) or \
        (in_iface and re.match(r"^\s*(suspend )?fun `(\w+)`", l)) or \
        re.match(r"^\s*(?:@Throws\(\w+::class\))?\s*(suspend )?fun `(\w+)`\(", l)
    if not decl:
        continue
    checked += 1
    prev = next((p for p in reversed(lines[max(0, i - 3):i]) if p.strip()), "")
    if not prev.strip().endswith("*/") and decl.group(2) != "RustBuffer":
        missing.append(f"{i + 1}: {l.strip()[:80]}")
for m in missing:
    print(m)
print(f"{checked} public declarations, {len(missing)} without KDoc")
sys.exit(1 if missing or checked < 50 else 0)
