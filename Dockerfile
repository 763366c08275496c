FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY graphwright ./graphwright
COPY graphs ./graphs
COPY nodes ./nodes
COPY tools ./tools
COPY checkpoints ./checkpoints
COPY graphwright_errors ./graphwright_errors
RUN pip install --no-cache-dir .
ENV GRAPHWRIGHT_HOME=/data
VOLUME ["/data"]
ENTRYPOINT ["graphwright"]
CMD ["serve", "--host", "0.0.0.0"]
