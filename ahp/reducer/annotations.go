package reducer

import (
	"slices"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Annotations applies a to the annotations state s. Every annotations action
// is client-dispatchable, so this runs both optimistically on clients and on
// the host, and must give the same result on both. Order is dispatch order:
// new annotations and entries are appended, replacements stay in place, and
// actions naming an unknown annotation or entry are no-ops.
func Annotations(s *wire.AnnotationsState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	case *wire.AnnotationsSetAction:
		ann := clone(a.Annotation)
		if i := annotation(s, ann.ID); i >= 0 {
			s.Annotations[i] = ann
			return
		}
		s.Annotations = append(s.Annotations, ann)
	case *wire.AnnotationsUpdatedAction:
		i := annotation(s, a.AnnotationID)
		if i < 0 {
			return
		}
		ann := &s.Annotations[i]
		if a.TurnID != nil {
			ann.TurnID = *a.TurnID
		}
		if a.Resource != nil {
			ann.Resource = *a.Resource
		}
		if a.Range != nil {
			ann.Range = clone(a.Range)
		}
		if a.Resolved != nil {
			ann.Resolved = *a.Resolved
		}
	case *wire.AnnotationsRemovedAction:
		if i := annotation(s, a.AnnotationID); i >= 0 {
			s.Annotations = slices.Delete(s.Annotations, i, i+1)
		}
	case *wire.AnnotationsEntrySetAction:
		i := annotation(s, a.AnnotationID)
		if i < 0 {
			return
		}
		ann := &s.Annotations[i]
		entry := clone(a.Entry)
		if j := annotationEntry(ann, entry.ID); j >= 0 {
			ann.Entries[j] = entry
			return
		}
		ann.Entries = append(ann.Entries, entry)
	case *wire.AnnotationsEntryRemovedAction:
		// Removing the last entry leaves an empty annotation, which the
		// protocol forbids producers to cause but the reducer does not
		// repair: collapsing it here would hide the producer's mistake from
		// every client differently.
		i := annotation(s, a.AnnotationID)
		if i < 0 {
			return
		}
		ann := &s.Annotations[i]
		if j := annotationEntry(ann, a.EntryID); j >= 0 {
			ann.Entries = slices.Delete(ann.Entries, j, j+1)
		}
	}
}

// annotation returns the index of the annotation id in s, or -1.
func annotation(s *wire.AnnotationsState, id string) int {
	return slices.IndexFunc(s.Annotations, func(a wire.Annotation) bool { return a.ID == id })
}

// annotationEntry returns the index of the entry id in ann, or -1.
func annotationEntry(ann *wire.Annotation, id string) int {
	return slices.IndexFunc(ann.Entries, func(e wire.AnnotationEntry) bool { return e.ID == id })
}
