package streams

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// OrderApps orders apps downstream first: an app that consumes
// another's sinks comes before it, so that when the upstream app grows its
// sinks, the downstream app's internal topics have already grown with them.
// Apps with no order between them are sorted by id. A cycle is an error.
func OrderApps(apps []App) ([]string, error) {
	byID := map[string]App{}
	for _, a := range apps {
		byID[a.ID] = a
	}
	ids := slices.Sorted(maps.Keys(byID))
	// downstream[u] are the apps that read u's sinks.
	downstream := map[string][]string{}
	for _, u := range ids {
		sinks := byID[u].TopicsWith(RoleSink)
		for _, d := range ids {
			if d == u {
				continue
			}
			for _, s := range byID[d].TopicsWith(RoleSource) {
				if slices.Contains(sinks, s) {
					downstream[u] = append(downstream[u], d)
					break
				}
			}
		}
	}
	const (
		unvisited = iota
		visiting
		done
	)
	mark := map[string]int{}
	var out []string
	var visit func(id string, path []string) error
	visit = func(id string, path []string) error {
		switch mark[id] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("the Streams apps feed each other in a cycle (%s): there is no downstream-first order", strings.Join(append(path, id), " → "))
		}
		mark[id] = visiting
		for _, d := range downstream[id] {
			if err := visit(d, append(path, id)); err != nil {
				return err
			}
		}
		mark[id] = done
		out = append(out, id)
		return nil
	}
	for _, id := range ids {
		if err := visit(id, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}
