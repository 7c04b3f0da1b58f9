package codec

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

// V030Selection is the model and agent a 0.3.0 client sees selected in a
// session whose default chat is chat: the draft's, else those of the most
// recent message that names one (the active turn, then the turns from the
// newest). 0.3.0 kept one selection per session that turns without a
// model did not change; the chat dialects keep it per message, so the
// history stands in for it. A draft in which a 0.3.0 client cleared its
// agent (SelectionMeta "agent", no agent) ends the search for an agent.
//
// The host should use it to fill in the model and agent of a
// chat/turnStarted translated from 0.3.0, whose message cannot carry them
// (copy the results before keeping them: they point into chat). The 0.3.0
// projection makes the same choice from the 0.7.0 form of the chat
// (selection070).
func V030Selection(chat *wire.ChatState) (*wire.ModelSelection, *wire.AgentSelection) {
	if chat == nil {
		return nil, nil
	}
	msgs := make([]*wire.Message, 0, len(chat.Turns)+2)
	if chat.Draft != nil {
		msgs = append(msgs, chat.Draft)
	}
	if chat.ActiveTurn != nil {
		msgs = append(msgs, &chat.ActiveTurn.Message)
	}
	for i := len(chat.Turns) - 1; i >= 0; i-- {
		msgs = append(msgs, &chat.Turns[i].Message)
	}
	agentDone := false
	if chat.Draft != nil {
		mark, _ := chat.Draft.Meta[SelectionMeta].(string)
		agentDone = mark == "agent"
	}
	return newestSelection(msgs, func(m *wire.Message) (*wire.ModelSelection, *wire.AgentSelection) { return m.Model, m.Agent }, agentDone)
}
