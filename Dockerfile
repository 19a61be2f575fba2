# The production image: the portal (web, worker, beat) on Python 3.11.
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends build-essential libpq5 \
    nodejs npm && rm -rf /var/lib/apt/lists/*
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .
# JupyterHub's proxy (the `hub` service): configurable-http-proxy and a Node >= 20 from npm.
RUN bash scripts/install-hub-proxy.sh /app/.hub
# The pages' plotly.js (the pinned basic bundle, from npm); then every static file under a hashed
# name with its .gz, served by WhiteNoise and cached for a year (docs/operations.md).
RUN bash scripts/install-plotly.sh /app/.vendor
ENV PORTAL_STATIC_MANIFEST=true
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput
RUN useradd --system --create-home portal && mkdir -p /app/var/hub /app/var/provider \
    && chown -R portal /app/var
USER portal
EXPOSE 8000
CMD ["gunicorn", "portal.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "4"]
