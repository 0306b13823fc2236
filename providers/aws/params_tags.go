package aws

import (
	"fmt"
	"maps"
	"strings"
)

// Annotations of user tags for every AWS resource of one gateway, "k1=v1,k2=v2": fleetgate's on a
// Gateway's spec.infrastructure (or a LoadBalancer Service), and the AWS Load Balancer
// Controller's on a LoadBalancer Service, so that Services move over unchanged. Both are checked
// as the class's tags are; an invalid one makes the gateway Invalid before any AWS call.
const (
	AnnotationTags    = "fleetgate.dev/aws-tags"
	AnnotationLBCTags = "service.beta.kubernetes.io/aws-load-balancer-additional-resource-tags"
)

// annotationTags are the user tags annotations ask for; fleetgate's annotation wins over LBC's on
// a key both set. The error names the annotation and what is wrong with it.
func annotationTags(annotations map[string]string) (map[string]string, error) {
	var out map[string]string
	for _, name := range []string{AnnotationLBCTags, AnnotationTags} {
		v, ok := annotations[name]
		if !ok {
			continue
		}
		tags, err := parseTagList(v)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %w", name, err)
		}
		if msgs := tagProblems(tags, "annotation "+name); len(msgs) > 0 {
			return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
		}
		if out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, tags)
	}
	return out, nil
}

// parseTagList reads "k1=v1,k2=v2" (spaces around items, keys and values trimmed; a value may be
// empty and may hold '='); a key given twice is refused, as its value would be a guess.
func parseTagList(s string) (map[string]string, error) {
	tags := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return tags, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(item, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok:
			return nil, fmt.Errorf("%q is not key=value", strings.TrimSpace(item))
		case k == "":
			return nil, fmt.Errorf("%q has an empty key", strings.TrimSpace(item))
		}
		if _, dup := tags[k]; dup {
			return nil, fmt.Errorf("key %q is given twice", k)
		}
		tags[k] = v
	}
	return tags, nil
}
