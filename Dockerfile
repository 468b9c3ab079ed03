# Two stages: a wheel is built from the source tree, and the image holds only the installed
# distribution (the same one tests/test_packaging.py checks), not the checkout. The test extras are
# not installed here.
FROM python:3.11-slim AS wheel
WORKDIR /src
COPY . .
RUN python -m pip wheel --no-deps --no-cache-dir . -w /wheel

FROM python:3.11-slim
WORKDIR /opt/searchgrade
COPY --from=wheel /wheel /tmp/wheel
# torch is pinned in pyproject.toml (2.13.0 has a CPU wheel; from PyPI on x86_64 it is the CUDA
# build, see the README's "Known limits").
RUN python -m venv .venv \
 && .venv/bin/python -m pip install --no-cache-dir /tmp/wheel/searchgrade-*.whl \
 && rm -r /tmp/wheel
ENV SEARCHGRADE_HOME=/data
VOLUME /data
EXPOSE 8501
# Bound to every interface, the app is exposed: it requires a login and refuses to start without one.
# Give it SEARCHGRADE_APP_PASSWORD (docker run -e SEARCHGRADE_APP_PASSWORD=..., at least 12
# characters), or Streamlit's OIDC login (st.login) with an [auth] table mounted at
# /opt/searchgrade/.streamlit/secrets.toml (the working directory's .streamlit/, read by Streamlit
# and by the start-up check alike). See the README's "Deploying". `searchgrade app` execs the
# Streamlit server, which thus gets docker stop's SIGTERM; it passes the Streamlit settings of the
# repository's .streamlit/config.toml on its command line, so the image needs no copy of it.
CMD [".venv/bin/searchgrade", "app", "--host", "0.0.0.0", "--port", "8501"]
