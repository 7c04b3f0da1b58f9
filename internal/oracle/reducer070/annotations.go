package reducer070

import (
	"slices"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
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
		if i := annotationIndex(s, ann.ID); i >= 0 {
			s.Annotations[i] = ann
			return
		}
		s.Annotations = append(s.Annotations, ann)
	case *wire.AnnotationsUpdatedAction:
		i := annotationIndex(s, a.AnnotationID)
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
		if i := annotationIndex(s, a.AnnotationID); i >= 0 {
			s.Annotations = slices.Delete(s.Annotations, i, i+1)
		}
	case *wire.AnnotationsEntrySetAction:
		i := annotationIndex(s, a.AnnotationID)
		if i < 0 {
			return
		}
		ann := &s.Annotations[i]
		entry := clone(a.Entry)
		if j := annotationEntryIndex(ann, entry.ID); j >= 0 {
			ann.Entries[j] = entry
			return
		}
		ann.Entries = append(ann.Entries, entry)
	case *wire.AnnotationsEntryRemovedAction:
		// Removing the last entry leaves an empty annotation. Producers
		// must remove the annotation instead; the reducer does not repair
		// their mistake, as the reference reducer does not, so that every
		// client of every implementation shows the same state.
		i := annotationIndex(s, a.AnnotationID)
		if i < 0 {
			return
		}
		ann := &s.Annotations[i]
		if j := annotationEntryIndex(ann, a.EntryID); j >= 0 {
			ann.Entries = slices.Delete(ann.Entries, j, j+1)
		}
	}
}

// annotationIndex returns the index of the annotation id in s, or -1.
func annotationIndex(s *wire.AnnotationsState, id string) int {
	return slices.IndexFunc(s.Annotations, func(a wire.Annotation) bool { return a.ID == id })
}

// annotationEntryIndex returns the index of the entry id in ann, or -1.
func annotationEntryIndex(ann *wire.Annotation, id string) int {
	return slices.IndexFunc(ann.Entries, func(e wire.AnnotationEntry) bool { return e.ID == id })
}
