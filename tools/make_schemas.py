"""Write schemas/*.schema.json: the JSON Schemas of every report kind for the built-in tasks.

    python tools/make_schemas.py [OUT_DIR]

The schemas are generated from the task registry by ``rpx_cli/report/schema_catalogue.py``
and the modules it names (edit them, or a task's declared ``report_properties``/
``row_properties``, and rerun this); the files are committed and shipped in the wheel, and a
test checks they equal the generator's output.
"""
import json
import os
import sys

from rpx_cli.report import schema_catalogue
from rpx_cli.tasks.registry import builtin_tasks

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), os.pardir, "schemas")
os.makedirs(out, exist_ok=True)
tasks = builtin_tasks()
for kind in schema_catalogue.kinds(tasks):
    with open(os.path.join(out, schema_catalogue.file_name(kind, tasks)), "w") as handle:
        json.dump(schema_catalogue.build(kind, tasks), handle, indent=2)
        handle.write("\n")
