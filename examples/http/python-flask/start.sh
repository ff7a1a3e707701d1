#!/usr/bin/env bash
# python-flask: throttlekit.wsgi's RateLimitMiddleware around a Flask app, served by Flask's
# development server (werkzeug, threaded) over a loopback socket (app.py). Installs a venv with
# the package and Flask on first run, then execs the server itself.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../python-env.sh" "flask>=3,<4"
exec "$PYTHON" "$HERE/app.py" "$1"
