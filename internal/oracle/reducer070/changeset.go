package reducer070

import (
	"slices"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// Changeset applies a to the changeset state s.
func Changeset(s *wire.ChangesetState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	case *wire.ChangesetStatusChangedAction:
		s.Status = a.Status
		// The error goes with the error status only, so a recovered
		// changeset does not keep showing the old failure.
		s.Error = nil
		if a.Status == wire.ChangesetStatusError {
			s.Error = clone(a.Error)
		}
	case *wire.ChangesetFileSetAction:
		file := clone(a.File)
		if i := changesetFileIndex(s, file.ID); i >= 0 {
			s.Files[i] = file
			return
		}
		s.Files = append(s.Files, file)
	case *wire.ChangesetFileRemovedAction:
		if i := changesetFileIndex(s, a.FileID); i >= 0 {
			s.Files = slices.Delete(s.Files, i, i+1)
		}
	case *wire.ChangesetFilesReviewChangedAction:
		ids := make(map[string]bool, len(a.Files))
		for _, id := range a.Files {
			ids[id] = true
		}
		for i := range s.Files {
			if ids[s.Files[i].ID] {
				s.Files[i].Reviewed = wire.Ptr(a.Reviewed)
			}
		}
	case *wire.ChangesetContentChangedAction:
		s.Files = clone(a.Files)
		// Absent operations mean "unchanged", not "none": a bulk refresh of
		// the files does not have to restate the operations.
		if a.Operations != nil {
			s.Operations = clone(a.Operations)
		}
		s.Error = clone(a.Error)
	case *wire.ChangesetOperationsChangedAction:
		s.Operations = clone(a.Operations)
	case *wire.ChangesetOperationStatusChangedAction:
		for i := range s.Operations {
			op := &s.Operations[i]
			if op.ID != a.OperationID {
				continue
			}
			op.Status = a.Status
			op.Error = nil
			if a.Status == wire.ChangesetOperationStatusError {
				op.Error = clone(a.Error)
			}
			return
		}
	case *wire.ChangesetClearedAction:
		s.Files = []wire.ChangesetFile{}
	}
}

// changesetFileIndex returns the index of the file id in s, or -1.
func changesetFileIndex(s *wire.ChangesetState, id string) int {
	return slices.IndexFunc(s.Files, func(f wire.ChangesetFile) bool { return f.ID == id })
}
