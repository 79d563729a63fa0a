# The loadrig image for `loadrig kube` (docs/distributed.md): the release binary built in a
# Rust image, copied into a slim Debian one. Build: docker build -t REGISTRY/loadrig:TAG .
# Where no registry or Docker daemon is at hand, scripts/image.sh writes a static
# (musl, FROM scratch) image of the same program as a tarball.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY workloads workloads
RUN cargo build --release --locked --bin loadrig

FROM debian:bookworm-slim
# CA certificates for TLS targets; nothing else is needed at run time (SQLite is bundled).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/loadrig /usr/local/bin/loadrig
USER 65534:65534
ENTRYPOINT ["/usr/local/bin/loadrig"]
