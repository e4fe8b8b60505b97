module github.com/ephpm/ephpm

go 1.23

require (
	github.com/google/uuid v1.6.0
	github.com/pierrec/lz4/v4 v4.1.33
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
