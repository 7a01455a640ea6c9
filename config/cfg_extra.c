/* config/cfg_extra.c: endpoints added at run time, merged into the config
 * file's YAML document before it is decoded (issue 34).
 *
 * An entry is a JSON object with the keys of a YAML endpoint entry. JSON is
 * YAML's flow style, so libyaml reads it; its nodes are copied into the
 * file's document at the end of its network's endpoints: list, and the one
 * decoder checks them with everything else (ids unique, ranges, a network's
 * cross-key checks), so there is no second parser. The copies have no line
 * (their errors name the path only). The YAML stays the base: an entry whose
 * id the file names already, or whose network the file no longer has, is not
 * merged (skipped, the caller logs it). */
#include <stdio.h>
#include <string.h>

#include "config/cfg_int.h"

/* Marks node id as having no line in the file (cfg_line gives 0). */
static void no_line(yaml_document_t *doc, int id)
{
    yaml_node_t *n = yaml_document_get_node(doc, id);
    n->start_mark.line = (size_t)-1;
}

/* Copies src's node id into dst; its new id, or 0 with *why set. */
static int copy_node(yaml_document_t *dst, yaml_document_t *src, int id, const char **why)
{
    yaml_node_t *n = yaml_document_get_node(src, id);
    int out = 0;
    switch (n->type) {
    case YAML_SCALAR_NODE:
        if (memmem(n->data.scalar.value, n->data.scalar.length, "${", 2) != NULL) {
            *why = "${...} is not expanded in an endpoint added at run time: give the value itself";
            return 0;
        }
        out = yaml_document_add_scalar(dst, NULL, n->data.scalar.value, (int)n->data.scalar.length,
                                       n->data.scalar.style);
        break;
    case YAML_SEQUENCE_NODE: {
        out = yaml_document_add_sequence(dst, NULL, YAML_FLOW_SEQUENCE_STYLE);
        size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
        for (size_t i = 0; i < count && out != 0; i++) {
            int item = copy_node(dst, src, yaml_document_get_node(src, id)->data.sequence.items.start[i], why);
            if (item == 0 || !yaml_document_append_sequence_item(dst, out, item))
                return 0;
        }
        break;
    }
    case YAML_MAPPING_NODE: {
        out = yaml_document_add_mapping(dst, NULL, YAML_FLOW_MAPPING_STYLE);
        size_t count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
        for (size_t i = 0; i < count && out != 0; i++) {
            yaml_node_pair_t p = yaml_document_get_node(src, id)->data.mapping.pairs.start[i];
            int k = copy_node(dst, src, p.key, why);
            int v = k != 0 ? copy_node(dst, src, p.value, why) : 0;
            if (v == 0 || !yaml_document_append_mapping_pair(dst, out, k, v))
                return 0;
        }
        break;
    }
    case YAML_NO_NODE:
        break;
    }
    if (out == 0 && *why == NULL)
        *why = "could not copy the entry";
    if (out != 0)
        no_line(dst, out);
    return out;
}

/* The value of key in mapping node id of doc, or 0. */
static int member(yaml_document_t *doc, int id, const char *key)
{
    yaml_node_t *m = yaml_document_get_node(doc, id);
    if (m == NULL || m->type != YAML_MAPPING_NODE)
        return 0;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (k != NULL && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(key) &&
            memcmp(k->data.scalar.value, key, strlen(key)) == 0)
            return p->value;
    }
    return 0;
}

/* 1 if the endpoints: list seq of doc names id (a shorthand item's id is "e<index>"). */
static int names_id(yaml_document_t *doc, int seq, const char *id)
{
    yaml_node_t *s = yaml_document_get_node(doc, seq);
    size_t count = (size_t)(s->data.sequence.items.top - s->data.sequence.items.start);
    for (size_t i = 0; i < count; i++) {
        int item = yaml_document_get_node(doc, seq)->data.sequence.items.start[i];
        yaml_node_t *n = yaml_document_get_node(doc, item);
        char dflt[32];
        snprintf(dflt, sizeof(dflt), "e%zu", i);
        yaml_node_t *v = n->type == YAML_MAPPING_NODE ? yaml_document_get_node(doc, member(doc, item, "id")) : NULL;
        const char *have = dflt;
        size_t len = strlen(dflt);
        if (v != NULL && v->type == YAML_SCALAR_NODE) {
            have = (const char *)v->data.scalar.value;
            len = v->data.scalar.length;
        }
        if (len == strlen(id) && memcmp(have, id, len) == 0)
            return 1;
    }
    return 0;
}

static void extra_error(cfg_errors_t *errs, const cfg_extra_ep_t *e, const char *msg)
{
    char path[160];
    snprintf(path, sizeof(path), "networks.%s.endpoints(%s)", e->network, e->id);
    cfg_errors_add(errs, 0, path, msg);
}

/* Copies entry e into the endpoints: list seq of doc. */
static void merge_one(yaml_document_t *doc, int seq, cfg_extra_ep_t *e, cfg_errors_t *errs)
{
    yaml_document_t tmp;
    cfg_errors_t perrs = {0};
    if (cfg_yaml_load(e->json, strlen(e->json), &tmp, &perrs) != SL_OK) {
        extra_error(errs, e, perrs.count > 0 ? perrs.items[0].message : "not a JSON object");
        cfg_errors_dispose(&perrs);
        return;
    }
    const char *why = NULL;
    yaml_node_t *root = yaml_document_get_root_node(&tmp);
    if (root->type != YAML_MAPPING_NODE) {
        extra_error(errs, e, "an endpoint added at run time is a JSON object");
    } else {
        int id = copy_node(doc, &tmp, 1, &why);
        if (id == 0 || !yaml_document_append_sequence_item(doc, seq, id))
            extra_error(errs, e, why != NULL ? why : "could not copy the entry");
        else
            e->merged = 1;
    }
    yaml_document_delete(&tmp);
}

void cfg_extra_merge(yaml_document_t *doc, cfg_extra_ep_t *eps, size_t n, cfg_errors_t *errs)
{
    yaml_node_t *root = yaml_document_get_root_node(doc);
    int nets = root != NULL && root->type == YAML_MAPPING_NODE ? member(doc, 1, "networks") : 0;
    for (size_t i = 0; i < n; i++) {
        cfg_extra_ep_t *e = &eps[i];
        e->merged = 0;
        e->skipped = NULL;
        int net = nets != 0 ? member(doc, nets, e->network) : 0;
        int seq = net != 0 ? member(doc, net, "endpoints") : 0;
        yaml_node_t *s = yaml_document_get_node(doc, seq);
        if (net == 0)
            e->skipped = "the config file has no such network";
        else if (s == NULL || s->type != YAML_SEQUENCE_NODE)
            e->skipped = "the network's endpoints: is not a list";
        else if (names_id(doc, seq, e->id))
            e->skipped = "the config file names the same id (the YAML wins)";
        else
            merge_one(doc, seq, e, errs);
    }
}

void cfg_extra_mark(cfg_t *cfg, const cfg_extra_ep_t *eps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!eps[i].merged)
            continue;
        pool_network_conf_t *net = (pool_network_conf_t *)cfg_network(cfg, eps[i].network, strlen(eps[i].network));
        for (size_t j = 0; net != NULL && j < net->nendpoints; j++)
            if (strcmp(net->endpoints[j].id, eps[i].id) == 0)
                net->endpoints[j].from_api = 1;
    }
}
