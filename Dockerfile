# ingle serve in a container: the CLI built from this repository, and the default models pulled
# at build time (`ingle pull --all`, from the package registries; docs/models.md), so a replica
# starts with nothing to download. deploy/kubernetes runs it; docs/operations.md says more.
#   docker build -t ingle .
#   docker run -p 8080:8080 ingle            # then: curl localhost:8080/ready
# Not built by CI: the machines that run it have no base images to start from.

FROM rust:1-bookworm AS build
# llama.cpp builds from source: cmake, and clang for bindgen.
RUN apt-get update && apt-get install -y --no-install-recommends cmake clang libclang-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p ingle-cli \
    && mkdir -p /opt/ingle/bin \
    # The binary finds libllama.so.0, libggml*.so and the CPU modules next to itself ($ORIGIN).
    && cp target/release/ingle target/release/lib*.so* /opt/ingle/bin/

FROM debian:bookworm-slim
# Speech phonemizes with espeak-ng (opened at run time); certificates for `ingle pull`.
RUN apt-get update && apt-get install -y --no-install-recommends libespeak-ng1 espeak-ng-data \
        ca-certificates libstdc++6 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/ingle/bin /opt/ingle/bin
ENV PATH=/opt/ingle/bin:$PATH \
    INGLE_MODELS_DIR=/opt/ingle/models
RUN ingle pull --all --quiet
RUN useradd --system --home /var/lib/ingle --create-home ingle
USER ingle
ENV INGLE_RESPONSES_STORE=/var/lib/ingle/responses.sqlite3
EXPOSE 8080
# SIGTERM drains: no new connections, in-flight requests finish (--drain-timeout), exit 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["ingle"]
CMD ["serve", "--host=0.0.0.0", "--port=8080", "--preload=all", "--log-format=json"]
