#pragma once
// The other servers a run may also train on, in the run setup: the chosen agent's peers (its
// agent.json "cluster", named in GET /v1/info, asked in the background), each ticked one taking
// as many ranks as the chosen server (the submit's `servers`; the agent serves the run's store
// and starts the peers' ranks, README "Several servers in one run"). Hidden while the agent has
// no peers or is not known.
#include <QStringList>
#include <QWidget>
#include <optional>
#include <vector>

#include "core/net/api_client.h"
#include "core/net/api_types.h"

class QLabel;
class QListWidget;

namespace crucible::ui {

class PeerPicker : public QWidget {
    Q_OBJECT
  public:
    explicit PeerPicker(QWidget* parent = nullptr);

    // The agent to ask; none for no agent. Asks at once; the ticks are cleared.
    void set_endpoint(std::optional<net::RemoteEndpoint> endpoint);
    // The peers the agent named, in its order.
    QStringList peers() const;
    // Ticks these peers. Names the agent has not listed yet are ticked when its answer lists
    // them (a cloned run chooses before the answer comes); set_endpoint forgets them.
    void choose(const QStringList& names);
    QStringList chosen() const;
    // The submit's `servers`: each ticked peer with as many ranks as the chosen server.
    std::vector<net::ServerRanks> submit_servers() const;

  signals:
    // The agent's answer (or error) arrived and is shown.
    void refreshed();
    void choice_changed();

  private:
    void show_peers(const std::vector<std::string>& peers);

    std::optional<net::RemoteEndpoint> endpoint_;
    int generation_ = 0;  // answers for an endpoint that was replaced are dropped
    QStringList wanted_;  // what choose() asked for, or the user ticked last
    QListWidget* list_ = nullptr;
    QLabel* note_ = nullptr;
};

}  // namespace crucible::ui
