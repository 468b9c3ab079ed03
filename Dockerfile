FROM python:3.11-slim
# git and a compiler are not needed for the app itself; the test extras are not installed here.
WORKDIR /opt/searchgrade
COPY . .
RUN ./install.sh
ENV SEARCHGRADE_HOME=/data
VOLUME /data
EXPOSE 8501
# Bound to every interface, the app is exposed: it requires a login and refuses to start without one.
# Give it SEARCHGRADE_APP_PASSWORD (docker run -e SEARCHGRADE_APP_PASSWORD=..., at least 12
# characters), or Streamlit's OIDC login (st.login) with an [auth] table mounted at
# /opt/searchgrade/.streamlit/secrets.toml. See the README's "Deploying". `searchgrade app` execs
# the Streamlit server, which thus gets docker stop's SIGTERM.
CMD [".venv/bin/searchgrade", "app", "--host", "0.0.0.0", "--port", "8501"]
