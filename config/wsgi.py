import os

from django.core.wsgi import get_wsgi_application

from config.processes import favour_throughput

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
favour_throughput()  # before the server's request threads start: they inherit it
application = get_wsgi_application()
