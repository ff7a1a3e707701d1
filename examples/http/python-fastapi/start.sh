#!/usr/bin/env bash
# python-fastapi: throttlekit.fastapi's RateLimit dependency on FastAPI, served by uvicorn
# (app.py). Installs a venv with the package and FastAPI/uvicorn on first run, then execs
# the server itself, so the PID run.sh started is the one listening.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../python-env.sh" "fastapi>=0.110,<1" "uvicorn>=0.30,<1"
exec "$PYTHON" "$HERE/app.py" "$1"
