"""How the controller package reaches the collection: the way Ansible itself does.

The controller reuses the collection's module_utils (ledger, gate parsers, image
verification, Redfish client) instead of keeping a second copy. ``install_loader()``
(run once when ``gpufleet`` is imported) installs ansible-core's collection loader
(``ansible.plugins.loader.init_plugin_loader``, what ``ansible-playbook`` runs at start)
over the configured collections path: ``ANSIBLE_COLLECTIONS_PATH``, else
``collections_path`` in the ansible.cfg Ansible picks (a checkout's ansible.cfg points at
``build/collections``, which ``make collection`` links to the checkout). After that,
``import ansible_collections.gpufleet.baremetal...`` resolves to the same files
``ansible-playbook`` runs. Nothing touches ``sys.path``.
"""
import os

__all__ = ["install_loader", "root", "collections_path", "CollectionNotFound", "COLLECTION"]

COLLECTION = "gpufleet.baremetal"
_state = {"installed": False, "root": None}


class CollectionNotFound(RuntimeError):
    """The gpufleet.baremetal collection is not on the configured collections path."""


def install_loader():
    """Install Ansible's collection loader once (idempotent)."""
    if not _state["installed"]:
        from ansible.plugins.loader import init_plugin_loader

        init_plugin_loader()
        _state["installed"] = True


def root():
    """The collection's directory (in a checkout: the checkout itself)."""
    if _state["root"] is None:
        install_loader()
        try:
            import ansible_collections.gpufleet.baremetal as collection
        except ImportError:
            raise CollectionNotFound(not_found_message())
        _state["root"] = os.path.realpath(list(collection.__path__)[0])
    return _state["root"]


def not_found_message():
    return ("gpufleet cannot find the %s collection in the collections path (%s). Install it "
            "with ansible-galaxy collection install, or set ANSIBLE_COLLECTIONS_PATH; in a "
            "checkout run `make collection` and work from the checkout (its ansible.cfg sets "
            "collections_path)." % (COLLECTION, collections_path() or "empty"))


def collections_path():
    """The collections path Ansible is configured with, ``:``-joined."""
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    return os.pathsep.join(AnsibleCollectionConfig.collection_paths or [])


def repo_path(*parts):
    """A path inside the checkout that holds the collection (build outputs, packer/)."""
    return os.path.join(root(), *parts)
