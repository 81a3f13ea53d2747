"""A layered config library: parse, merge, validate against a schema, migrate, resolve, hash, sweep.

    parse_layer(name, text)        TOML or JSON text -> dict, or one plain error naming layer and line
    deep_merge(base, over)         maps merge key by key; lists and scalars are replaced whole
    validate(config, schema)       unknown / missing / type / range / cross-field findings, and the
                                   config normalized losslessly to the schema's types
    migrate(config, schema)        renamed keys moved to their current names
    resolve(layers, pins, schema=) layers in order, pins always win; provenance per leaf, validation,
                                   derived fields, the config hash and the experiment hash
    canonical_json / sha256_hex    json.dumps(obj, sort_keys=True, separators=(",", ":")) -> SHA-256
    expand_sweep(axes)             the cartesian product of sweep axes, one override per run

Pure Python, JSON-shaped data only. `training_schema.TRAINING_SCHEMA` is the schema of a
training run, the one the ml-config-system question uses.
"""

from models.configlib.hashing import canonical_json, sha256_hex
from models.configlib.merge import clone, deep_merge, drop_paths, flatten, get_path, provenance, set_path
from models.configlib.migrate import migrate
from models.configlib.parse import ParsedLayer, parse_layer
from models.configlib.resolve import PinOverride, Resolution, resolve
from models.configlib.schema import Field, Issue, Schema
from models.configlib.sweep import expand_sweep
from models.configlib.validate import validate

__all__ = [
    "Field", "Issue", "ParsedLayer", "PinOverride", "Resolution", "Schema", "canonical_json", "clone",
    "deep_merge", "drop_paths", "expand_sweep", "flatten", "get_path", "migrate", "parse_layer",
    "provenance", "resolve", "set_path", "sha256_hex", "validate",
]
