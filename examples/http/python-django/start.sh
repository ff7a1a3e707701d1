#!/usr/bin/env bash
# python-django: throttlekit.django's middleware and decorators in a Django project (project/),
# configured in project/settings.py, served by gunicorn (one worker process, so the memory store
# is the whole server's; four threads). Installs a venv with the package, Django and gunicorn on
# first run, then execs the server itself, so the PID run.sh started is the one listening.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../python-env.sh" "django>=5,<6" "gunicorn>=27,<28"
exec "$PYTHON" -m gunicorn --chdir "$HERE" --bind "${HOST:-127.0.0.1}:$1" --workers 1 --threads 4 \
  --log-level warning project.wsgi
