#!/usr/bin/env python3
"""Checks the scenario schema's generated forms against the files they describe.

1. docs/scenario-reference.md is exactly what `dtwin keys --markdown` prints.
2. `dtwin keys` lists every key of the JSON Schema, and every key it lists is in the schema.
3. The JSON Schema (`dtwin keys --json-schema`, checked with the jsonschema package) accepts every
   shipped scenario (scenarios/, validation/) and rejects every file of the bad-scenario corpus
   (tests/scenarios/bad/) that is malformed by shape: an unknown or missing key, a value of the
   wrong type, a name outside its choices, a number outside its range. The corpus files that
   break only a rule between keys (tp dividing the heads, ...) are outside a JSON Schema's reach
   and are listed, not checked; so are those that are not YAML or repeat a key (PyYAML keeps the
   last value).

Usage: check_schema.py REPOSITORY_ROOT DTWIN_EXECUTABLE     exit 0 when all hold, 1 otherwise
"""

import glob
import json
import os
import re
import subprocess
import sys

import jsonschema
import yaml

# Parts of dtwin's messages (the corpus files' "# expect:" lines) that name a shape error.
SHAPE_ERRORS = ("unknown key", "missing key", "expected one of", "expected a positive integer",
                "expected a non-negative integer", "such as", "> 0", ">= 0", "expected a map",
                "expected a string", "expected a non-empty string", "expected a list",
                "expected a fraction", "expected 0, 1, 2 or 3")
NOT_YAML_FOR_PYYAML = ("invalid YAML", "duplicate key")


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's booleans (only true and false), as yaml-cpp, dtwin and
    YAML editors read them; YAML 1.1 also takes yes, no, on and off."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:bool",
                                   re.compile(r"^(?:true|false)$"), list("tf"))


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=Yaml12Loader)


def dtwin(exe, *args):
    return subprocess.run([exe, *args], check=True, capture_output=True, text=True).stdout


def schema_keys(schema, prefix=""):
    """Every dotted key path of the schema's properties, sections included."""
    keys = []
    for name, sub in schema.get("properties", {}).items():
        path = prefix + name
        keys.append(path)
        keys.extend(schema_keys(sub, path + "."))
    return keys


def expectation(path):
    with open(path, encoding="utf-8") as f:
        first = f.readline()
    return first[len("# expect: "):].rsplit(" @ ", 1)[0] if first.startswith("# expect: ") else ""


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    root, exe = sys.argv[1], os.path.abspath(sys.argv[2])
    failures = []

    reference = os.path.join(root, "docs", "scenario-reference.md")
    with open(reference, encoding="utf-8") as f:
        if f.read() != dtwin(exe, "keys", "--markdown"):
            failures.append(f"{reference}: differs from `dtwin keys --markdown`; regenerate it "
                            "with `dtwin keys --markdown > docs/scenario-reference.md`")

    schema = json.loads(dtwin(exe, "keys", "--json-schema"))
    jsonschema.Draft202012Validator.check_schema(schema)
    listed = [line.split()[0] for line in dtwin(exe, "keys").splitlines()
              if line and not line.startswith(" ")]
    if sorted(listed) != sorted(schema_keys(schema)):
        failures.append(f"`dtwin keys` lists {sorted(set(listed) ^ set(schema_keys(schema)))} "
                        "apart from the JSON Schema")

    validator = jsonschema.Draft202012Validator(schema)
    shipped = sorted(glob.glob(os.path.join(root, "scenarios", "*.yaml")) +
                     glob.glob(os.path.join(root, "validation", "*.yaml")))
    for path in shipped:
        errors = list(validator.iter_errors(load(path)))
        if errors:
            failures.append(f"{path}: rejected by the JSON Schema: {errors[0].message}")

    rejected, rules_only, not_yaml = 0, [], []
    for path in sorted(glob.glob(os.path.join(root, "tests", "scenarios", "bad", "*.yaml"))):
        expected = expectation(path)
        if any(part in expected for part in NOT_YAML_FOR_PYYAML):
            not_yaml.append(os.path.basename(path))
            continue
        if not any(part in expected for part in SHAPE_ERRORS):
            rules_only.append(os.path.basename(path))
            continue
        if validator.is_valid(load(path)):
            failures.append(f"{path}: malformed by shape ({expected}) but the JSON Schema "
                            "accepts it")
        else:
            rejected += 1

    print(f"JSON Schema: {len(shipped)} shipped scenarios accepted; {rejected} malformed-by-shape "
          f"corpus files rejected; {len(rules_only)} break rules between keys only "
          f"({', '.join(rules_only)}); {len(not_yaml)} not read by PyYAML as dtwin reads them "
          f"({', '.join(not_yaml)})")
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
