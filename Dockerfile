FROM python:3.11-slim
# git and a compiler are not needed for the app itself; the test extras are not installed here.
WORKDIR /opt/searchgrade
COPY . .
RUN ./install.sh
ENV SEARCHGRADE_HOME=/data
VOLUME /data
EXPOSE 8501
CMD [".venv/bin/searchgrade", "app", "--host", "0.0.0.0", "--port", "8501"]
