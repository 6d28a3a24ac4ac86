package streamstest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// appDirRel is the Maven project's place in the repository.
const appDirRel = "test/streams-app"

// AppDir returns the Maven project's directory, found by walking up from the
// working directory (go test runs in the package directory).
func AppDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		candidate := filepath.Join(dir, appDirRel)
		if _, err := os.Stat(filepath.Join(candidate, "pom.xml")); err == nil {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("streamstest: no %s/pom.xml above the working directory", appDirRel)
		}
		dir = parent
	}
}

// Build packages the Streams app with Maven and returns the path of its
// runnable jar: only when pom.xml or a file under src/ changed since the
// last build, once for concurrent callers (kafkatest.BuildMavenJar).
func Build(ctx context.Context) (string, error) {
	dir, err := AppDir()
	if err != nil {
		return "", err
	}
	jar, err := kafkatest.BuildMavenJar(ctx, dir, "streams-app.jar")
	if err != nil {
		return "", fmt.Errorf("streamstest: building the Streams app: %w", err)
	}
	return jar, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
