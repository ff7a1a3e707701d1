"""gunicorn project.wsgi: Django builds the middleware here, so a bad THROTTLEKIT stops the
server at start-up with a ConfigInvalidError naming the setting."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_wsgi_application()
