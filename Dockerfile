# syntax=docker/dockerfile:1
# The Thoth server image: `docker build -t thoth .` (docs/DEPLOYMENT.md). Two stages: a Rust toolchain builds the
# shipped (`dist`) binary, a slim Debian of the same release runs it as an unprivileged user over a /data volume.

FROM rust:1.95-bookworm AS build
# librdkafka (the `kafka` feature of the interface engine) is compiled from source by cargo: C toolchain, make,
# perl and pkg-config come with the image; its TLS needs the OpenSSL headers, and cmake is not needed.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The caches keep the registry and the build between image builds; the binary is copied out of the cache mount.
# The `dist` profile is release with whole-program LTO (Cargo.toml): its link takes about 5.4 GB of memory.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --profile dist --locked -p thoth \
    && cp target/dist/thoth /usr/local/bin/thoth

FROM debian:bookworm-slim
# ca-certificates: package downloads over HTTPS (`thoth import ...`); libssl3: librdkafka's TLS to brokers.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libssl3 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /data --no-create-home thoth \
    && mkdir /data && chown thoth:thoth /data
COPY --from=build /usr/local/bin/thoth /usr/local/bin/thoth
USER 10001:10001
ENV THOTH_DATA=/data
VOLUME /data
# HTTP (FHIR, terminology, messages, /healthz, /readyz, /metrics) and MLLP.
EXPOSE 8080 2575
# No HEALTHCHECK: orchestrators probe /healthz (alive) and /readyz (ready for traffic) themselves.
ENTRYPOINT ["thoth"]
# A read-only terminology replica over the data an import put in /data; for the interface engine run
# `serve --http 0.0.0.0:8080 --mllp 0.0.0.0:2575 --auth /etc/thoth/auth.toml` instead.
CMD ["serve", "--read-only", "--http", "0.0.0.0:8080"]
