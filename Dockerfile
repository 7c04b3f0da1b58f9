# syntax=docker/dockerfile:1
#
# ahp-bridge as a small static image that runs as a non-root user:
#
#   docker build --build-arg COMMIT=$(git rev-parse HEAD) -t ahp-bridge .
#   docker run --rm -p 127.0.0.1:8081:8081 -p 127.0.0.1:9090:9090 \
#     -v ahp-bridge-state:/var/lib/ahp-bridge -v "$PWD/ahp-token:/run/secrets/ahp-token:ro" ahp-bridge \
#     serve --listen 0.0.0.0:8081 --token-file /run/secrets/ahp-token --ops-listen 0.0.0.0:9090 \
#       --acp demo='ahp-bridge demo-agent'
#
# ACP agents run as child processes of the bridge, so a real agent must be
# in the same image: build one FROM this image's binary (examples/sidecar).

FROM golang:1.26-alpine AS build
WORKDIR /src
# Dependencies first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG COMMIT=""
# CGO_ENABLED=0: a static binary (the SQLite driver is pure Go), which the
# distroless static base needs. -trimpath keeps build paths out of it.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.commit=${COMMIT}" \
      -o /out/ahp-bridge ./cmd/ahp-bridge \
 && mkdir -p /out/state

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ahp-bridge /usr/local/bin/ahp-bridge
# The state directory, owned by the nonroot user (65532): the default state
# file is $XDG_STATE_HOME/ahp-bridge/state.db.
COPY --from=build --chown=65532:65532 /out/state /var/lib/ahp-bridge
ENV XDG_STATE_HOME=/var/lib
VOLUME ["/var/lib/ahp-bridge"]
USER 65532:65532
# 8081: AHP (WebSocket); 9090: the ops endpoints when --ops-listen names it.
EXPOSE 8081 9090
ENTRYPOINT ["/usr/local/bin/ahp-bridge"]
CMD ["serve", "--listen", "0.0.0.0:8081", "--ops-listen", "0.0.0.0:9090"]
