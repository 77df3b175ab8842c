# syntax=docker/dockerfile:1
# The cueop controller image: `docker build -t cueop:dev .` (config/manager
# deploys cueop:dev). The templates are not in the image: they come from the
# cueop-templates ConfigMap, mounted at /templates.

FROM golang:1.26 AS builder
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
# .dockerignore keeps binaries, caches, tests and test data out.
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/cueop ./cmd/cueop

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/cueop /cueop
USER 65532:65532
ENTRYPOINT ["/cueop"]
CMD ["run", "--templates=/templates"]
